// Package proto is the wire protocol between the Nexus host and a
// go-plugin binary: the gRPC services and messages generated from
// plugin.proto (protocol version 1 of the go-plugin handshake; `make
// proto` regenerates them), and the Decide fast path, a Unix socket with
// length-prefixed frames that plugins built with this SDK also serve
// (fastpath.go).
//
// Plugin authors never use it: sdk/plugin implements the plugin side and
// internal/plugin the host side. Events and decisions travel as the same JSON
// that WASM filters receive (sdk/event), so a filter's logic can move
// between the two without a rewrite.
package proto
