// Command transport-ssh is a Nexus transport plugin: it runs a stdio MCP
// server on another machine over SSH and carries the session over the SSH
// channel's stdin and stdout (newline-delimited JSON-RPC, as local stdio
// servers speak it).
//
// The server's host key is always checked against known_hosts files;
// authentication is by private key file or an SSH agent.
package main
