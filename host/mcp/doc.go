// Package mcp is the Model Context Protocol (revisions 2024-11-05 through
// 2025-11-25, and the stateless 2026-07-28) as Nexus speaks it: a lean
// JSON-RPC 2.0 peer, the MCP types, a client session and a server role.
//
// The client is dual-era (client_modern.go): it probes a server with
// server/discover and falls back to the initialize handshake for a legacy
// one; with a modern server every request carries its own _meta, MRTR
// input requests reach the same handlers a legacy server's requests do,
// lists are cached for their ttlMs and kept fresh by subscriptions/listen,
// and a task a server answers a tools/call with (the tasks extension,
// client_tasks.go) is followed to its result; the server role runs task
// tools as such tasks (server_tasks.go).
//
// It is the pure protocol: it imports no other Nexus package, knows nothing
// of processes, HTTP or configuration, and talks to the outside world only
// through a Conn, one JSON-RPC message per frame. Transports (stdio,
// streamable HTTP, plugins) provide Conns; the host puts policies around the
// Client.
//
// It is public on purpose, the protocol API beside the host facade rather
// than under internal/ (issue 39 weighed moving it): the host's API speaks
// it (CallTool returns its results, Client hands out its sessions, an
// embedder's own transport, host.Options.Transport, and
// host.Gateway.Serve take a Conn), and it is a complete protocol library
// on its own. Its contract is small and is the one to follow: a Conn is
// three methods, one JSON-RPC message per frame (ExampleConn); a Server
// is NewServer and a handler per tool, resource or prompt (Example,
// ExampleServer_AddResource); a Client is Connect over a Conn, whatever
// the revision (ExampleClientOptions_elicitation). What is public here is
// held to the compatibility an importer expects; the Examples build in
// another module as they are.
//
// We write our own peer rather than build on an SDK because a security host
// must see and bound every frame, and because the per-call cost matters:
// the hot path (Peer.CallRaw) builds frames by hand into a reused buffer and
// pools its call records, so a small tools/call allocates a few KB at most.
//
// Threads, not JSON, dominate a round trip on a loaded or virtualized
// machine: every goroutine a message wakes on its way can cost more than
// the rest of the call. So one goroutine at a time holds the reading role,
// and the role moves to where the work is. Over a DirectReader (stdio
// pipes) a caller reads its own reply; a request is served on the
// goroutine that read it, and one that runs long is overtaken by another
// reader after serveDelay (one overtaken before, which waits with the
// stack it grew, when there is one); requests that arrive together are answered in
// one write (FrameBufferer). A request a caller reads while it waits for
// its own reply (a server's elicitation during a call) is served on a
// spare worker, which kept the stack the last one grew, when one waits. Over HTTP a caller runs its own POST
// (RequestWriter) and a server serves a POST on its handler's goroutine
// (PushConn), from the POST's own body when the transport vouches for it
// (CheckedPushConn). A background reader takes a free role after idleDelay, so
// nothing the other side sends waits long while no call is in flight, and
// at once when a call that cannot read its own reply finds it free (a
// handler asking the other side mid-request).
//
// Everything that arrives is bounded: frames by the transport, pages of list
// results by maxPages and cursor-loop detection, concurrent incoming
// requests by PeerOptions.MaxHandlers and MaxQueue, and every outgoing
// request by a timeout that sends notifications/cancelled when it fires.
package mcp
