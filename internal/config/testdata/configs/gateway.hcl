# Every gateway setting, server prefixes and agent tokens: compiled to
# every format and loaded back from nexus-json by the round-trip tests.

variable "claude_token" {
  sensitive = true
  env       = "GITHUB_TOKEN" # secrets of the tests' environment
}

variable "ci_token" {
  sensitive = true
  env       = "NEXUS_INPUT_API_KEY"
}

server "github" {
  prefix = "gh_"
  http {
    url = "https://api.githubcopilot.com/mcp/"
  }
}

server "solo" {
  prefix = ""
  stdio {
    command = "solo-mcp"
  }
}

agent "claude" {
  permission = "trusted"
  tokens     = [var.claude_token, var.ci_token]
}

agent "readonly" {
  permission = "sandboxed"
  servers    = ["github"]
}

gateway {
  listen           = "0.0.0.0:8443"
  metrics          = "127.0.0.1:9464"
  public_url       = "https://nexus.example.com/mcp"
  allowed_origins  = ["https://app.example.com", "http://localhost:3000"]
  required_servers = ["github", "solo"]
  tls {
    cert = "certs/gateway.pem"
    key  = "certs/gateway-key.pem"
  }
  limits {
    max_body_bytes           = 4194304
    max_sessions             = 1000
    max_requests             = 256
    max_requests_per_session = 32
    max_sse_events           = 1024
    session_idle_timeout     = "30m"
    shutdown_grace           = "10s"
  }
  oauth {
    issuer      = "https://login.example.com"
    jwks_url    = "https://login.example.com/.well-known/jwks.json"
    audience    = "https://nexus.example.com/mcp"
    scopes      = ["mcp"]
    agent_claim = "email"
    agents      = { "alice@example.com" = "claude", "*" = "readonly" }
  }
}
