# nexus.hcl: the default Nexus configuration.
#
# Nexus reads this file, once trusted (`nexus trust`), when it is in the
# directory you run nexus from; with no config found it uses a built-in copy,
# so `nexus tools` works out of the box. Layers, later wins per server name:
#   ~/.nexus/            (mcp.json, nexus.hcl.json, nexus.hcl)
#   every parent directory's .nexus/
#   ./.nexus/ and ./nexus.hcl
# `--config FILE` (repeatable) or NEXUS_CONFIG replace the search.
# `nexus config show` prints what was loaded and from where.

# The built-in MCP test server, over stdio. Its reads are harmless, so a
# trusted agent (the command line's "cli") is asked only before tool calls.
server "testserver" {
  confirm = "tool_calls"
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

# More examples (see examples/configs/nexus.hcl for every block):
#
# variable "github_token" {
#   sensitive   = true          # read from $GITHUB_TOKEN; compiled as ${GITHUB_TOKEN}
#   description = "GitHub token for the GitHub MCP server"
# }
#
# server "github" {
#   stdio {
#     command = "npx"
#     args    = ["-y", "@modelcontextprotocol/server-github"]
#     env     = { GITHUB_PERSONAL_ACCESS_TOKEN = var.github_token }
#   }
# }
#
# server "remote" {
#   timeout = "60s"
#   http {
#     url     = "https://mcp.example.com/mcp"
#     headers = { Authorization = "Bearer ${env("REMOTE_TOKEN")}" }
#   }
# }
#
# agent "ci" {
#   permission = "sandboxed"
#   servers    = ["testserver"]
#   deny       = ["*.delete_*"]
# }
