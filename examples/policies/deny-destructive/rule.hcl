# The agent's own rule: it sees only ci's events.
agent "ci" {
  permission = "trusted"

  rule "no-destructive" {
    when   = "method == 'tools/call' && tool.annotations.destructiveHint"
    action = "deny"
    reason = "agent ci may not call destructive tools"
  }
}
