// Command pipeecho copies each line of stdin to stdout: the raw pipe round
// trip that MCP-over-stdio calls are measured against. A line longer than
// its buffer is copied in pieces.
package main
