// Command transport-websocket is a Nexus transport plugin: MCP over
// WebSocket, one JSON-RPC message per text frame, subprotocol "mcp".
//
// Config (the server's plugin { config = {...} } block):
//
//	url                 ws:// or wss:// URL of the server (required)
//	headers             extra handshake headers, e.g. Authorization
//	tls.ca_file         PEM bundle to trust instead of the system roots
//	tls.cert_file/key_file  client certificate for mutual TLS
//	tls.server_name     name to verify instead of the URL's host
//	tls.insecure_skip_verify  accept any certificate (testing only)
//	ping_interval       keepalive ping period ("30s"; "0s" turns it off)
//	ping_timeout        how long a pong may take ("10s")
//	handshake_timeout   bound on connect and upgrade ("10s")
package main
