# Redact one field (data.field) of a result's structuredContent.
package policies.redact

import rego.v1

default decision := {"action": "allow"}

decision := {"action": "modify", "result": object.union(input.result, {"structuredContent": object.union(input.result.structuredContent, {data.field: "[redacted]"})})} if {
	_ = input.result.structuredContent[data.field]
}
