# Nexus config: rate limits on the built-in test server's tools.

plugin "ratelimit" {
  path   = "../../bin/plugins/policy-ratelimit"
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # replace with the output of: sha256sum bin/plugins/policy-ratelimit
}

server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

filter "limits" {
  kind   = "policy"
  plugin = "ratelimit"
  config = {
    # Gateway replicas that share a Redis count together (README: Across
    # replicas); put the URL, password and all, in a sensitive variable:
    # store          = var.session_store
    # on_store_error = "deny" # or "local": each replica counts alone while Redis is down
    per_agent = { rate = "60/m" }
    per_tool  = { rate = "10/m", burst = 3 }
    tools = {
      "testserver.slow_operation" = { rate = "2/m" }
    }
  }
}
