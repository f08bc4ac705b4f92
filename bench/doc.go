// Package bench measures Nexus's MCP client against a raw pipe and against
// the official go-sdk and mcp-go clients, all talking to the same server in
// the same run. It is a separate module so the product never depends on the
// SDKs it is compared with. It also compares Nexus with peers in other
// processes: the TypeScript SDK v2 client on a modern-only server
// (node, from tools/npm), npm bridges, and `nexus serve` against
// Stacklok's ToolHive proxy (toolhive_test.go, behind the toolhive build
// tag: `make bench-toolhive` installs thv and podman, and
// `make bench-report` runs it).
//
//	go test -run '^$' -bench . -benchmem
//
// Each round-trip benchmark reports p50 and p99 in microseconds; the
// comparison benchmarks interleave the contenders call by call so machine
// noise hits them alike, and report the ratio of their p50s.
package bench
