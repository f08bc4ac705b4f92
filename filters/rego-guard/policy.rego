# rego-guard: a Nexus policy written in Rego, compiled to WebAssembly with
#   opa build -t wasm -e nexus/guard/decision policy.rego
# input is the Nexus event (sdk/filter/ABI.md); data is the filter's config.
package nexus.guard

import rego.v1

# The settings, from the filter's config (data), with their defaults.
default admins := []

admins := data.admins

default blocked_servers := []

blocked_servers := data.blocked_servers

# A tool is destructive when its annotations say so, or its name does.
destructive if input.tool.annotations.destructiveHint == true

destructive if {
	some prefix in ["delete_", "drop_", "remove_", "destroy_", "purge_"]
	startswith(input.tool.name, prefix)
}

deny contains sprintf("%s may not call the destructive tool %s.%s", [input.agent.id, input.server.name, input.tool.name]) if {
	input.method == "tools/call"
	destructive
	not input.agent.id in admins
}

deny contains sprintf("server %s is blocked", [input.server.name]) if {
	input.server.name in blocked_servers
}

deny contains sprintf("argument %q looks like a credential", [name]) if {
	input.method == "tools/call"
	some name, value in object.get(input.params, "arguments", {})
	is_string(value)

	# The substring test first: OPA's WebAssembly library compiles a
	# pattern anew at every evaluation, so the regex runs only on a
	# candidate.
	some marker in ["sk-", "ghp_", "AKIA"]
	contains(value, marker)
	regex.match(`(sk-[a-zA-Z0-9]{16,}|ghp_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16})`, value)
}

# A page size over the limit is lowered, not refused.
capped := object.union(input.params, {"arguments": object.union(input.params.arguments, {"limit": data.max_limit})}) if {
	input.method == "tools/call"
	input.params.arguments.limit > data.max_limit
}

decision := {"action": "deny", "reason": concat("; ", sort(deny))} if {
	count(deny) > 0
} else := {"action": "modify", "params": capped} if {
	capped
} else := {"action": "allow"}
