// Package policies holds three policies written four ways each — a CEL
// rule in HCL, Rego compiled by OPA, a Go SDK WASM filter and a go-plugin
// — with the test that runs every way against the same cases, so the four
// can be compared line for line (README.md says which to choose when).
package policies
