# Every block nexus.hcl knows, in one file. `nexus config show --config
# examples/configs/nexus.hcl` prints what it compiles to; `nexus config
# compile` turns it into mcpServers JSON for Claude or VS Code.

# Settings for the host itself. Relative paths start at this file's directory.
nexus {
  roots = ["../.."]
}

# A secret: read from $GITHUB_TOKEN (or NEXUS_VAR_github_token), never
# written into compiled configs; they get ${GITHUB_TOKEN} instead.
variable "github_token" {
  sensitive   = true
  description = "GitHub token for the GitHub MCP server"
}

# The token the claude agent presents to the gateway (see agent "claude"):
# its own secret, never a credential of an upstream server.
variable "claude_token" {
  sensitive   = true
  description = "Bearer token of the claude agent at the gateway"
}

# A plain variable with a default; NEXUS_VAR_tool_count=30 overrides it.
variable "tool_count" {
  default     = 10
  description = "How many tools the test server offers"
}

locals {
  npx      = ["npx", "-y"]
  packages = { fetch = "@modelcontextprotocol/server-fetch", memory = "@modelcontextprotocol/server-memory" }
  bearer   = "Bearer ${var.github_token}"
}

server "testserver" {
  timeout          = "30s"
  fail_if_no_tools = true
  confirm          = "tool_calls" # trusted agents are asked before tool calls only, not reads
  stdio {
    command         = "nexus"
    args            = ["testserver", "--tool-count", tostring(var.tool_count)]
    env             = { EXAMPLE_HOME = env("HOME", "/") }
    env_passthrough = ["LANG"]
    env_file        = "example.env"
    cwd             = "."
  }
}

server "github" {
  prefix = "gh_" # its tools are exposed as gh_<tool> (default mcp_github_<tool>); "" for bare names
  http {
    url           = "https://api.githubcopilot.com/mcp/"
    headers       = { Authorization = local.bearer }
    max_retries   = 3
    retry_backoff = "500ms"
  }
}

server "internal" {
  enabled = false
  http {
    url                    = "http://10.0.0.5:8080/sse"
    legacy_sse             = true
    allow_private_networks = true
  }
  oauth {
    client_id = "nexus"
    scopes    = ["mcp:tools"]
  }
}

server "tunnel" {
  plugin {
    name   = "ssh"
    config = { host = "bastion.example.com", user = lower("OPS") }
  }
}

# One server per package, from a map.
dynamic "server" {
  for_each = local.packages
  labels   = [server.key]
  content {
    stdio {
      command = local.npx[0]
      args    = concat(slice(local.npx, 1, length(local.npx)), [server.value])
    }
  }
}

plugin "ssh" {
  path   = "../../bin/plugins/transport-ssh"  # make plugins builds it
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000"
}

filter "deny-destructive" {
  kind     = "policy"
  wasm     = "../../bin/filters/deny-destructive.wasm" # make filters builds it
  abi      = 1
  on_error = "deny"
  config   = jsondecode(file("policy.json"))
  match {
    servers = ["github", "testserver"]
    tools   = ["*"]
  }
  match {
    methods = ["resources/read"]
  }
  limits {
    memory_mb = 64
    timeout   = "100ms"
    pool      = 4
  }
}

# A policy plugin: nexus config validate starts it to check this config
# against the plugin's own schema (--skip-plugins where it is not built).
plugin "ratelimit" {
  path   = "../../bin/plugins/policy-ratelimit" # make plugins builds it
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # sha256sum of the binary
}

filter "ratelimit" {
  kind   = "policy"
  plugin = "ratelimit"
  config = {
    per_agent = { rate = "120/m" }
    tools     = { "github.delete_*" = { rate = "1/h" } }
  }
}

# A rule: a CEL expression over the event (internal/rules), compiled when
# the config loads. This one lowers page sizes instead of refusing them.
rule "cap-page-size" {
  when   = "has(args.per_page) && args.per_page > 100"
  action = "modify"
  set    = { "arguments.per_page" = "100" }
}

# A Rego policy compiled by OPA (filters/rego-guard): the bundle opa build
# writes, its entrypoint, and its data in config.
filter "rego-guard" {
  kind       = "policy"
  wasm       = "../../bin/filters/rego-guard.tar.gz" # make filters builds it
  entrypoint = "nexus/guard/decision"
  config     = { admins = ["release-bot"], max_limit = 100 }
}

agent "ci" {
  permission = "sandboxed"
  servers    = ["testserver", "github"]
  allow      = ["testserver.*", "github.get_*"]
  deny       = ["*.delete_*"]

  # A rule in an agent block sees only that agent's calls.
  rule "no-prod" {
    when   = "has(args.repo) && args.repo.endsWith('-prod')"
    action = "deny"
    reason = "ci works on staging repositories only"
  }
}

# An agent that reaches the gateway over HTTP: a request carrying one of
# its tokens acts as it. Only the tokens' hashes are kept in memory.
agent "claude" {
  permission = "trusted" # its first use of each server is confirmed through the client (elicitation)
  deny       = ["github.delete_*"]
  tokens     = [var.claude_token]
}

# A model that answers servers' sampling requests: any OpenAI-compatible
# chat-completions endpoint (here a local Ollama; api_key = var.NAME for a
# hosted one). Only the servers listed may sample; each request is
# confirmed at the terminal unless confirm = false.
sampling {
  url        = "http://127.0.0.1:11434/v1"
  model      = "llama3.1"
  servers    = ["testserver"]
  max_tokens = 512
  per_minute = 6
}

# nexus serve: the MCP server Nexus offers to agents. Flags override it.
gateway {
  listen           = "127.0.0.1:8750"
  public_url       = "https://nexus.example.com/mcp"
  allowed_origins  = ["https://app.example.com"]
  required_servers = ["testserver"]
  limits {
    max_sessions             = 1000
    max_requests_per_session = 32
    session_idle_timeout     = "30m"
    shutdown_grace           = "10s"
  }
}
