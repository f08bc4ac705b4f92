# Nexus config: rate limits on the built-in test server's tools.

plugin "ratelimit" {
  path   = "bin/plugins/policy-ratelimit"
  sha256 = "replace with: sha256sum bin/plugins/policy-ratelimit"
}

server "testserver" {
  command = ["nexus", "testserver"]
}

filter "limits" {
  kind   = "policy"
  plugin = "ratelimit"
  config = {
    per_agent = { rate = "60/m" }
    per_tool  = { rate = "10/m", burst = 3 }
    tools = {
      "testserver.slow_operation" = { rate = "2/m" }
    }
  }
}
