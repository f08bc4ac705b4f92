// Package listen serves the benchmark servers' HTTP: one way to listen on
// the address a benchmark chose, say so on stderr in the line the
// benchmark waits for ("NAME listening on ADDR"), and exit if serving
// stops.
package listen
