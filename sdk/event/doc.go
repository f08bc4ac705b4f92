// Package event is the one event schema of Nexus: the JSON that WASM
// filters and go-plugin policies and sanitizers receive, and the decision
// they return. It has no dependencies, so the host, guest SDKs and plugins
// all share it.
//
//	{"abi": 1, "phase": "request", "method": "tools/call",
//	 "agent": {"id": "cli", "permission": "trusted"},
//	 "server": {"name": "github", "info": {"name": "...", "version": "..."}},
//	 "tool": {"name": "delete_repo", "annotations": {"destructiveHint": true}},
//	 "params": {...}, "result": {...}}
//
// A decision is {"action": "allow|deny|modify", "reason": "...",
// "params": {...}, "result": {...}}. Policies act on the request phase,
// sanitizers on the response phase.
package event
