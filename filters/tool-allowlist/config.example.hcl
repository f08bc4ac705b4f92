filter "tool-allowlist" {
  kind   = "policy"
  wasm   = "./bin/filters/tool-allowlist.wasm"
  config = {
    allow = ["testserver.*", "github.get_*", "github.list_*", "github.search_*"]
  }
  match {
    methods = ["tools/call", "tools/list"]
  }
}
