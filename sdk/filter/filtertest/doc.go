// Package filtertest builds and runs WASM filters in tests: it compiles a Go
// filter package to a real .wasm with the standard toolchain (so `go test`
// needs nothing but Go), loads it in the runtime Nexus uses (Load, with a
// Spec of public types, for an author's tests; Runtime for the host's
// own), runs the table of cases a filter keeps in testdata/cases.json
// (RunWASM), builds Rego policies with the OPA compiler, and starts the
// same filter built natively as a process, the out-of-process baseline of
// benchmarks. ConfigRule and ConfigFilters load the rule or filter blocks
// of an example config as the host loads it, so a test runs what a user
// pastes.
package filtertest
