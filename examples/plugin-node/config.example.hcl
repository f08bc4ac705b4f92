plugin "node" {
  path   = "/opt/nexus/plugins/node-allowlist"
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # replace with: sha256sum /opt/nexus/plugins/node-allowlist
}

filter "allowed-tools" {
  kind   = "policy"
  plugin = "node"
  config = { allow = ["github.get_*", "github.search_*", "fs.read_file"] }
}
