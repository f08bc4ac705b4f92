// Package pollpipe reads pipes for the stdio transport on both sides (the
// host reading a server's stdout, the server role reading its stdin) so
// that a message expected soon wakes the one thread waiting for it, while
// idle waits still cost no thread. See Reader. It is Linux only; elsewhere
// the callers use *os.File and the runtime's poller.
package pollpipe
