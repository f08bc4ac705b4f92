// Package pluginwire is the wire protocol between the Nexus host and a
// go-plugin binary, as Go code: the gRPC services and messages generated
// from the public contract, sdk/plugin/proto/plugin.proto (protocol
// version 1 of the go-plugin handshake; `make proto` regenerates them, and
// TestGeneratedMatchesProto fails while they are stale), and the Decide
// fast path, a Unix socket with length-prefixed frames that plugins built
// with sdk/plugin also serve (fastpath.go); and what both sides must agree
// on besides: the go-plugin handshake, the kinds, the size and window
// limits, and the reattach descriptor of a plugin run under a debugger
// (handshake.go).
//
// The contract is public so that plugins can be written in any language
// (sdk/plugin/proto/README.md; examples/plugin-node is one in Node.js).
// This Go code is not: it lives under internal/ so that no Go author
// depends on it. sdk/plugin implements the plugin side and internal/plugin
// the host side. Events and decisions travel as the same JSON that WASM
// filters receive (sdk/event), so a filter's logic can move between the two
// without a rewrite.
package pluginwire
