# Only the servers in data.servers; everything else (calls, listings,
# reads) is refused, so a listing hides it.
package policies.allowlist

import rego.v1

deny contains sprintf("server %s is not in the allowlist", [input.server.name]) if {
	not input.server.name in data.servers
}
