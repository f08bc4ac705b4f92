# Nexus config: the built-in test server on another machine, over SSH.

plugin "ssh" {
  path   = "../../bin/plugins/transport-ssh"
  sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # replace with the output of: sha256sum bin/plugins/transport-ssh
}

server "remote" {
  plugin {
    name = "ssh"
    config = {
      host          = "build.internal"
      user          = "deploy"
      command       = "nexus testserver"
      known_hosts   = "/home/me/.ssh/known_hosts"
      identity_file = "/home/me/.ssh/id_ed25519"
    }
  }
}
