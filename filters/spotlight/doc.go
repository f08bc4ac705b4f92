// Command spotlight is a Nexus sanitizer filter and a prompt-injection
// defence: it wraps the text a tool returns in clearly marked delimiters
// that carry a per-session random marker, so the model can tell data from
// instructions, and text inside cannot fake the end of the block (it
// cannot guess the marker). Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o spotlight.wasm .
package main
