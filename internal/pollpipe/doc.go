// Package pollpipe reads a pipe (a stdio server's stdout, as the stdio
// transport reads it; a stdio server's own stdin, as mcp.StdioConn reads
// it) so that a message expected soon wakes the one thread waiting for it
// while idle waits still cost no thread. See Reader. It is Linux only;
// elsewhere an *os.File is read through the runtime's poller. It imports
// no other Nexus package, so the protocol package may use it.
package pollpipe
