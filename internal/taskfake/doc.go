// Package taskfake is an MCP server for tests of the requestor's side of
// tasks (MCP 2025-11-25): its tools run only as tasks, so a client must
// create the task, poll it and fetch its result, and may cancel it.
package taskfake
