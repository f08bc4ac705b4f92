// Package config loads Nexus configuration into the canonical mcpServers
// model: one Server per MCP server (plus the Plugin, Filter and Agent
// blocks later packages give behaviour), each remembering its origin (layer,
// file, line) so that every error and `nexus config show` can point at it.
//
// Front ends, all producing the same model:
//
//   - JSON (json.go): every mcpServers dialect as it is: Claude Desktop,
//     Claude Code's .mcp.json (type, url, headers, ${VAR}, ${VAR:-default}),
//     Cursor (${env:NAME}, ${userHome}, ${workspaceFolder}, envFile), VS Code
//     ({"servers", "inputs"}, ${input:id}), the Nexus array format and the
//     Nexus fields. Comments and trailing commas are accepted, with a
//     warning in a file a strict-JSON client reads (Claude, Cursor). Unknown
//     fields warn (with the nearest known name); wrong types are errors.
//   - HCL (hcl.go): nexus.hcl and nexus.hcl.json, decoded in phases:
//     variables, locals (in dependency order; a cycle is an error), then the
//     nexus, server, plugin, filter, agent and gateway blocks with dynamic
//     blocks expanded. Functions: env(), file() and the go-cty standard library,
//     each call's result limited to 1 MiB of text and 100,000 elements, and
//     the functions that can make far more than their arguments (range,
//     indent, format's widths, replace) checked before they run; the for
//     expressions of a file go over at most 100,000 elements in all, however
//     nested (limits.go).
//     Relative paths start at the file's directory.
//
// Transport options belong to their transports (options.go): the stdio and
// HTTP transports each keep an option.Table of their settings beside their
// code, and the HCL schema, the JSON server keys, the decoding in both
// formats, nexus.hcl and JSON output, and the warnings of compile come from
// those tables. Top-level blocks are moving to their owners the same way
// (issue 39, blocks.go): the lock, telemetry, sampling and audit blocks are
// each an option.Block in their package (internal/lock, internal/telemetry,
// internal/sampling, internal/audit), decoded from nexus.hcl and JSON and
// written to nexus JSON through its table; so are internal/policy's
// filter, rule and agent blocks, which are named and written any number
// of times (a label row; in JSON an array or an object by name) and hold
// blocks of their own (nested rows), internal/plugin/block's plugin block,
// and internal/gateway/block's gateway block with its tls, limits and
// oauth. Each format reads any table's block
// through one option.Body (body.go); the loader knows only where the
// block's origin and templates are kept. Server holds each transport's Options as decoded; what
// selects a transport (the command, the url) and is spelled differently by
// every client's format is read here.
//
// Layering (load.go): ~/.nexus/, every ancestor directory's .nexus/, then
// ./.nexus/ and ./nexus.hcl; in one directory mcp.json, nexus.hcl.json,
// nexus.hcl. Later wins per name, and the winner lists what it overrode;
// a later gateway block replaces the whole block. Names that
// refer across layers (a transport's plugin, required_servers, the agents
// of the gateway's oauth, tokens shared by two agents) are checked after
// merging (gateway.go), at the element or member that names them: a row
// keeps where each was written (option.Value's ItemSites and MemberSites).
// --config (Options.Files) or NEXUS_CONFIG replace discovery; with nothing
// found, the built-in default (the repository's nexus.hcl) runs the test
// server.
//
// Workspace trust (trust.go): the ancestor and local layers come with the
// repository the working directory is in, so each is applied only when
// the trust store (~/.nexus/trust.json, or $NEXUS_TRUST) holds its path
// and the sha256 of its bytes; those same bytes are then parsed, so the
// file cannot change between check and use. An untrusted file is not
// evaluated at all: Config.Untrusted lists it with what it would run and
// read, read from its syntax alone (inventory.go). The global layer,
// --config, NEXUS_CONFIG and the built-in default are trusted implicitly.
// In a workspace file, relative file(), env_file and plugin paths must
// stay in the workspace tree, symlinks resolved.
//
// Secrets: a value from the environment, a sensitive variable or an input
// keeps a Template ("Bearer ${TOKEN}") beside its value. Compile (and
// NewView, behind `nexus config show`) write the template, never the value,
// and Compile lists whatever a target format cannot express as warnings.
// The nexus-json format loads back to the same model. A credential written
// into a file as it is (a URL's password, an api_key query parameter, an
// Authorization header, a secret-named env value, an agent's token) is
// masked with a warning to move it to a variable (mask.go);
// CompileShowingSecrets and NewView(cfg, true) write it.
//
// Config files are outside input: at most 10 MiB (checked before reading),
// UTF-8, and every problem is a diag.Report with the file, layer, line,
// column, a snippet with a caret, what was expected and found, and a fix.
// All the problems of all the files come back at once, as Errors.
package config
