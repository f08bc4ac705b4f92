filter "tool-poisoning" {
  kind   = "policy"
  wasm   = "./bin/filters/tool-poisoning.wasm"
  sha256 = "…"   # make filters prints it
  config = {
    action          = "withhold"                # or "warn"
    rules           = { shadowing = "warn" }    # per rule: withhold | warn | off
    max_description = 4096
    max_definition  = 65536
    ignore          = []                        # "server.tool" globs not scanned
  }
  match { methods = ["tools/list"] }
}
