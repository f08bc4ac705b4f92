filter "redact-secrets" {
  kind   = "sanitizer"
  wasm   = "./bin/filters/redact-secrets.wasm"
  config = {
    disable = []
    keys    = ["session_id"]
  }
}
