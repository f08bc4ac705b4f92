// Command sdk is allowlist written with the Go SDK (sdk/filter), built to
// WebAssembly. It reads one field through the View and never parses the
// event.
package main
