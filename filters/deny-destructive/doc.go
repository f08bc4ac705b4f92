// Command deny-destructive is a Nexus policy filter: it denies calls of
// tools whose annotations say destructiveHint: true, or whose names match
// the configured globs, unless the agent's permission is yolo. Build it
// with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o deny-destructive.wasm .
package main
