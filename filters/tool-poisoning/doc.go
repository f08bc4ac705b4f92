// Command tool-poisoning is a Nexus policy filter that reviews the tools a
// tools/list shows an agent and withholds (or flags) poisoned
// definitions: hidden instructions to the model, <IMPORTANT>-style tags,
// requests for keys and credentials or to send data elsewhere, mentions
// of other servers' tools (shadowing), invisible Unicode, terminal
// escapes, oversized descriptions. Build it with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o tool-poisoning.wasm .
package main
