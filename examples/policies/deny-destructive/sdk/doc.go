// Command sdk is deny-destructive written with the Go SDK (sdk/filter),
// built to WebAssembly: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared.
package main
