// Package longframe collects a message frame longer than a transport's
// read buffer and hands it over whole, in memory its caller owns: a
// Collector. The protocol package's StreamConn uses it, so a 1 MB tool
// result is copied out of the read buffer once, into blocks kept for the
// next long frame, and once more into a buffer of exactly its size that
// the reader keeps (no clone in the protocol layer, no doubling as the
// frame grows). The stdio transport reads long frames straight into
// their own buffer instead (it owns the pipe, so it can hand back the
// bytes read past a frame's end). It imports no
// other Nexus package, so the protocol package may use it.
package longframe
