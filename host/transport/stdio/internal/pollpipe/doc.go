// Package pollpipe reads the pipe a stdio server writes its stdout to, so
// that a reply expected soon wakes the one thread waiting for it while
// idle waits still cost no thread. See Reader. It is Linux only;
// elsewhere the transport reads an *os.File through the runtime's poller.
package pollpipe
