// Command filter-template is a WASM policy filter to copy: it denies tool
// calls whose arguments contain one of the configured words. It shows the
// parts every filter has: a typed config, a handler registered from init,
// cheap field access through a View, a log line, and tests that run the
// same cases natively and through the real runtime.
//
// Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o filter-template.wasm .
package main
