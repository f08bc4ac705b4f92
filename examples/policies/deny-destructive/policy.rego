# Deny destructive tools to one agent (data.agent). A tool is destructive
# as MCP says: destructiveHint, true unless the tool is read-only.
package policies.deny_destructive

import rego.v1

read_only if input.tool.annotations.readOnlyHint == true

destructive if {
	not read_only
	object.get(object.get(input.tool, "annotations", {}), "destructiveHint", true) == true
}

deny contains sprintf("agent %s may not call destructive tools (%s.%s)", [input.agent.id, input.server.name, input.tool.name]) if {
	input.method == "tools/call"
	input.agent.id == data.agent
	destructive
}
