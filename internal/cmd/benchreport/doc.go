// Command benchreport runs the end-to-end benchmarks (make bench-report)
// and writes their figures into README.md between the bench-report
// markers, so the table a user reads cannot drift from the code: every
// cell is a benchmark's own metric, its range over several runs, from
// this run.
package main
