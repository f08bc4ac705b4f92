// Command tool-allowlist is a Nexus policy filter: only the tools whose
// "server.tool" name matches one of the configured globs may be listed or
// called; tools/list hides the rest. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tool-allowlist.wasm .
package main
