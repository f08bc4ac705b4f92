// Package longframe collects a message frame longer than a transport's
// read buffer and hands it over whole, in memory its caller owns: a
// Collector. The stdio transport's reader and the protocol package's
// StreamConn both use it, so a 1 MB tool result is copied out of the read
// buffer once, into blocks kept for the next long frame, and once more
// into a buffer of exactly its size that the reader keeps (no clone in
// the protocol layer, no doubling as the frame grows). It imports no
// other Nexus package, so the protocol package may use it.
package longframe
