# Nexus config using the plugin template: build it first with
#   go build -o bin/plugins/plugin-template ./examples/plugin-template

plugin "template" {
  path   = "../../bin/plugins/plugin-template"
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # replace with the output of: sha256sum bin/plugins/plugin-template
}

server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

filter "no-deletes" {
  kind   = "policy"
  plugin = "template"
  config = { deny = ["*.delete_*"] }
}

filter "api-keys" {
  kind   = "sanitizer"
  plugin = "template"
  config = { pattern = "sk-[A-Za-z0-9]{20,}" }
}
