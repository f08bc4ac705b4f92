# Nexus config using the WebSocket transport plugin against the built-in
# test server: run `nexus testserver --ws 127.0.0.1:8765` first.

plugin "websocket" {
  path   = "../../bin/plugins/transport-websocket"
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # replace with the output of: sha256sum bin/plugins/transport-websocket
}

server "remote" {
  plugin {
    name = "websocket"
    config = {
      url           = "ws://127.0.0.1:8765/mcp"
      ping_interval = "30s"
      ping_timeout  = "10s"
    }
  }
}
