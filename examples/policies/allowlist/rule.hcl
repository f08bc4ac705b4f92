# Only these servers, for every agent: a rule at the top level is a link of
# the chain, like a filter. A denied tools/list event hides the tool.
rule "allowlist" {
  when   = "!(server.name in ['github', 'testserver'])"
  action = "deny"
  reason = "this server is not in the allowlist"
}
