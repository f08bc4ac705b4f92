// Package mcp is the Model Context Protocol (revision 2025-11-25) as Nexus
// speaks it: a lean JSON-RPC 2.0 peer, the MCP types, a client session and a
// server role.
//
// It is the pure protocol: it imports no other Nexus package, knows nothing
// of processes, HTTP or configuration, and talks to the outside world only
// through a Conn, one JSON-RPC message per frame. Transports (stdio,
// streamable HTTP, plugins) provide Conns; the host puts policies around the
// Client.
//
// We write our own peer rather than build on an SDK because a security host
// must see and bound every frame, and because the per-call cost matters:
// the hot path (Peer.CallRaw) builds frames by hand into a reused buffer and
// pools its call records, so a small tools/call allocates a few KB at most.
//
// Everything that arrives is bounded: frames by the transport, pages of list
// results by maxPages and cursor-loop detection, concurrent incoming
// requests by PeerOptions.MaxHandlers and MaxQueue, and every outgoing
// request by a timeout that sends notifications/cancelled when it fires.
package mcp
