// Package testserver is the built-in MCP test server behind
// `nexus testserver`: a real MCP server, built on the server role of
// host/mcp, that hosts and their tests can connect to without installing
// anything.
//
// It serves the test features of the design (seed "Test Server"): the tools
// echo, get_time, add and slow_operation; the resources file:///readme.txt,
// file:///config.json and file:///data/users.csv; the prompts greeting,
// code_review and summarize. Around them are the features a host must
// handle and that are awkward to get from a third-party server on demand:
//
//   - tool errors (fail), huge results (large_output, past the 10 MiB frame
//     limit if asked), non-text content (emit_binary: image, audio,
//     resource_link and embedded resource blocks);
//   - server-to-client requests from inside a tool call: sampling (sample),
//     elicitation (elicit) and roots (roots);
//   - progress and cancellation (slow_operation), logging with
//     logging/setLevel (echo logs at level info), completion of prompt and
//     template arguments, a URI template (file:///users/{id}) and a blob
//     resource (file:///logo.png);
//   - pagination: Options.ToolCount adds generated tools tool_001..tool_NNN
//     and Options.PageSize cuts every list into pages (the environment
//     variables MCP_TOOL_COUNT and MCP_PAGE_SIZE set them for the CLI).
//
// It speaks both eras on every transport: 2025-11-25 sessions (initialize)
// and 2026-07-28 stateless requests (host/mcp's server role serves them).
// Options.Conformance (--conformance) adds the official conformance
// suite's fixtures for both (conformance.go, modern.go): for 2026-07-28
// the input-required-result-* tools and prompt, whose requestState is
// sealed with an HMAC key made at start and bound to its request,
// server-stateless's diagnostic tools, and the tasks-* scenarios' task
// tools (tasks.go: slow_compute, failing_job, confirm_delete, ...), which
// run as tasks of the tasks extension for a modern client that declares
// it. Options.LegacyOnly (--legacy-only) serves 2025-11-25 and earlier
// alone, as a server built before the stateless revision: those fixtures
// then ask the client with server-initiated requests (legacy.go), each
// naming its inputRequests key in _meta[mcp.MetaInputKey], for a bridging
// gateway in front.
//
// New returns the *mcp.Server for in-process use (serve it over mcp.Pipe);
// ServeStdio runs one session over newline-delimited JSON, as a subprocess
// does. Integration tests and the round-trip benchmarks use it as the peer,
// so the hot path (echo over stdio) does no per-frame logging and no copies
// beyond the one that appends the newline.
package testserver
