// Command embed is a Go program that embeds Nexus through its facade
// alone: it loads a configuration, starts the host (every server connects
// concurrently), lists the tools an agent may use under their exposed
// names, calls one through the whole policy chain, and closes the host,
// which stops every server process it started.
//
//	go run ./examples/embed                      # built-in config: `nexus testserver` from PATH
//	go run ./examples/embed -config mcp.json -agent me -tool github.list_issues -args '{"repo":"x/y"}'
package main
