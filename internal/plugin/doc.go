// Package plugin runs go-plugin binaries for the host: transport plugins
// that carry MCP sessions, and policy and sanitizer plugins that join the
// filter chain as policy.Link values.
//
// A Manager launches each plugin block once and supervises it:
//
//   - Before anything runs, the binary must exist, be executable and match
//     the sha256 pinned in its plugin block, and what runs is exactly what
//     was hashed: on Linux the open file is executed through its descriptor
//     (/proc/self/fd/N); elsewhere, and for scripts, the bytes are hashed
//     as they are copied to a private directory and the copy runs. A
//     binary swapped in at the path after the check never runs. Unpinned
//     plugins run only with Options.InsecureSkipChecksum, and then with a
//     loud warning.
//   - The handshake is gRPC only, with go-plugin's magic cookie, AutoMTLS and
//     versioned plugin sets (HostProtocolVersions), under a start timeout.
//   - The child gets a sanitized environment (the stdio transport's
//     SafeEnvKeys, nothing else of the host's), /dev/null as stdin (go-plugin
//     would hand it the host's stdin, which in gateway mode carries an MCP
//     stream), and its own process group; on Linux the kernel kills it if
//     the host dies.
//   - Its hclog output is re-emitted through the host's logger as
//     "<host>.plugin.<name>"; the last lines it wrote to stderr are kept for
//     error messages. A JSON line whose @message, @level or @timestamp is
//     not a string, which would panic go-plugin's reader and the host with
//     it, is passed on with them as strings (stderr.go).
//   - A crash fails the calls in flight at once (transport requests with a
//     JSON-RPC error, code CodePluginCrashed, naming the plugin and its last
//     stderr lines; policy calls with a *CrashError), and the plugin is
//     restarted with exponential backoff. Links configure the new process
//     on their next call; a transport session ends, and the next Dial (the
//     registry's reconnect on next use) runs on the new process.
//   - Policy and sanitizer calls go over the Decide fast path where the
//     plugin serves it (fastpath.go: a Unix socket in a private directory,
//     a token, one call at a time per pooled connection, read on the
//     calling goroutine), else over one gRPC Decisions stream per process.
//   - NEXUS_REATTACH_PLUGINS (see sdk/plugin.Debug) attaches to plugins
//     already running under a debugger instead of launching them.
//   - Close stops every process, gracefully and then by force; CleanupAll
//     is go-plugin's last line of defence for main.
//
// Config blocks are validated against the JSON Schema a plugin declares for
// each kind (santhosh-tekuri/jsonschema, no external references) when the
// host loads them; errors are *ConfigError values with the config's file and
// line. This package's errors carry facts (the plugin block, the stderr
// tail, the checksums); internal/explain builds the reports a person
// reads from them. Inspect asks a binary what it offers, for `nexus plugin
// inspect`.
//
// The wire protocol is internal/pluginwire, generated from the public
// contract sdk/plugin/proto/plugin.proto; Go plugin authors use
// sdk/plugin, authors in other languages the contract and its README.
package plugin
