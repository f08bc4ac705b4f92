// Package plugin is the SDK for writing Nexus plugins: separate binaries,
// launched by the host through hashicorp/go-plugin, that add a transport, a
// policy or a sanitizer (any subset, in one binary).
//
// An author implements the kinds they need and calls Serve from main:
//
//	func main() {
//		plugin.Serve(plugin.Options{Policy: myPolicy{}})
//	}
//
// and never sees gRPC, go-plugin or the handshake: the SDK serves the
// public contract, sdk/plugin/proto/plugin.proto (gRPC only, protocol
// version 1; its README is the guide for plugins in other languages), converts
// events and decisions to and from the JSON every Nexus filter sees
// (sdk/event), and turns panics and errors into messages the host shows.
//
// Kinds:
//   - Transport: Open(config) returns a Conn carrying one MCP session, one
//     JSON-RPC message per frame (the websocket and ssh plugins are
//     examples). The host streams frames over one long-lived gRPC stream
//     per session.
//   - Policy: for each filter that names the plugin, NewPolicy(config)
//     returns a Decider that answers request events with allow, deny or
//     modify.
//   - Sanitizer: the same for response events.
//
// Each kind may also implement SchemaProvider; the host validates the
// config block against that JSON Schema when it loads the plugin and
// reports errors with the config file and line.
//
// Logging: write through Logger(); the host re-emits each line through its
// own logger, tagged with the plugin's name. Anything a plugin prints to
// stderr is also kept, and its last lines appear in the host's error
// messages when the plugin fails.
//
// Debugging: a plugin binary run with -debug serves in-process, prints a
// NEXUS_REATTACH_PLUGINS value and waits; export it and run nexus, and the
// host attaches to the running plugin instead of launching it, so the
// plugin can run under a debugger.
package plugin
