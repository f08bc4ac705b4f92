# A filter rolled out in shadow mode: its decisions are recorded as
# would-deny and would-modify, not enforced.
server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

filter "tool-poisoning" {
  kind   = "policy"
  wasm   = "bin/filters/tool-poisoning.wasm"
  mode   = "shadow"
  match {
    methods = ["tools/list"]
  }
}

# An agent whose rules are tried out first: what its deny list refuses is
# recorded as would-deny, and goes through.
agent "claude" {
  permission = "yolo"
  deny       = ["testserver.fail", "testserver.large_*"]
  mode       = "shadow"
}

# Every decision recorded, hash-chained (nexus audit verify checks it).
audit {
  path              = "nexus-audit.jsonl"
  max_bytes         = 1048576
  keep              = 3
  fail_closed       = true
  include_arguments = true
}

# Traces to a local collector (the OTEL_* variables would do as well).
telemetry {
  endpoint     = "http://127.0.0.1:4318"
  protocol     = "http/protobuf"
  service_name = "nexus-shadow"
}
