// Package filtertest builds and runs WASM filters in tests: it compiles a Go
// filter package to a real .wasm with the standard toolchain (so `go test`
// needs nothing but Go), loads it in a real Runtime, runs the table of
// cases a filter keeps in testdata/cases.json, builds Rego policies with
// the OPA compiler, and starts the same filter
// built natively as a process, the out-of-process baseline of benchmarks.
package filtertest
