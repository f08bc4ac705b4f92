filter "deny-destructive" {
  kind   = "policy"
  wasm   = "./bin/filters/deny-destructive.wasm"
  config = {
    tools              = ["*.drop_*", "github.force_push", "rm_rf"]
    assume_destructive = false
    hide               = false
  }
  match {
    methods = ["tools/call", "tools/list"]
  }
}
