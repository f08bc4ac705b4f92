filter "rego-guard" {
  kind       = "policy"
  wasm       = "./bin/filters/rego-guard.tar.gz"
  entrypoint = "nexus/guard/decision"
  config = {
    admins          = ["release-bot"]
    blocked_servers = ["legacy-ftp"]
    max_limit       = 100
  }
}
