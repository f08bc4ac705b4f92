// Package gateway serves the host as an MCP server (`nexus serve`): every
// downstream session, over stdio or streamable HTTP, acts as one agent,
// sees that agent's catalog across all configured servers, and every
// request it makes goes through the same chain as a CLI call. The host is
// internal/engine's Host, served directly (host.NewGateway hands over the
// facade's).
//
// The catalog is the union of the agent's visible tools, resources,
// resource templates and prompts. Tools and prompts are exposed under their
// server's prefix (mcp_<server>_<name> by default, the names the CLI uses;
// a server block's `prefix` changes it, "" exposes bare names); resource
// URIs and templates stay as their servers give them, and a read is routed
// to the server that lists the URI or a template matching it.
//
// The rule for upstream connections: a downstream session whose client
// declares sampling, elicitation or roots gets upstream connections of its
// own (the engine's NewSession, opened on first use, closed with the session), so
// a server's requests and notifications reach that client and no other;
// an agent may hold MaxOwnSessions such sessions (the HTTP limit
// max_upstream_sessions_per_agent, default 32), and an initialize past it
// is refused, saying so: each starts server processes of its own. A
// session whose client declares none of them shares its agent's
// connections (one per agent and server, made on first use, closed with
// the gateway), never another agent's; a server's requests there go to
// the era bridge (below): a modern request's call answers them, anything
// else (a legacy session's call's among them) is refused, saying why
// (roots/list gets the agent's configured roots).
//
// Starting: a list request (tools, resources, templates, prompts) waits
// at most Options.ListWait (gateway `list_wait`, default 1 s) for servers
// that are not up, with one timer and no polling; those still starting
// are left out of that answer (logged at debug) and keep starting in the
// background, bounded by their connect timeout and the host's Close. The
// session remembers them, and when one comes up (the host's OnChange)
// it gets list_changed for tools, resources and prompts, so the client
// lists again. Eager start warms what listing uses: the agent's shared
// connections (or a session's own), since those, not the host's own,
// answer its lists. `nexus serve --agent NAME` warms that agent's at
// start; otherwise (Options.Eager) an agent's first initialize warms its
// shared connections and a session with its own warms those, so no
// processes are started for agents that never connect. Servers with
// `start = "lazy"` are left to first use. A server that fails to start
// is logged and named in /readyz's servers_down (with the agent whose
// connection failed); it does not make the gateway unready unless it is
// required.
//
// What a server sends reaches only whom it concerns. Progress goes to
// the call whose token asked for it (each call gets an upstream token of
// its own, mapped back to the client's). A log message a streamable HTTP
// server sends on a request's response stream is that request's: it goes
// to the session whose call it was, on that call's stream (mcp.CallOf),
// or nowhere once the call has ended. Any other log message on a shared
// connection (stdio, the standalone stream) goes to the one session of
// the agent that has requests in
// flight to the server, on such a request's stream; with none, to every
// session of the agent; with several, to none (the protocol does not say
// whose it is, and copying it to each would put one call's data on every
// other call's answer). list_changed goes to the agent's sessions that
// may see the server, resources/updated to those subscribed to the URI.
// Nothing a connection carries crosses to another agent. A lockfile
// swapped while the gateway serves (the host's SetLock: the console's
// accept, or the file changed by another replica or nexus lock) is a
// change to the tools list of each agent whose tools it releases or
// withholds (lockswap.go): their sessions get tools/list_changed, and
// their subscriptions/listen streams that opted in to tools.
//
// Over HTTP each agent has its own share of the listener's limits
// (max_sessions_per_agent, max_requests_per_agent,
// max_inflight_bytes_per_agent) beside the global ones: an agent past its
// share gets 429 and cannot fill the global caps alone, so another agent
// is not refused for its sake. Request bodies and the answers they get
// count against the bytes budget while the request is in progress (a
// request reserves its body's size again for its answer); a
// request that does not fit waits briefly, then gets 503 (429 for the
// agent's share) with Retry-After. See httpserver.Options.
//
// A refusal reaches the client as the report the command line prints
// for the same error (internal/explain builds it), in brief
// (diag.Report's Brief): a refused call as a tool result the model reads,
// a refused list, read or prompt as a JSON-RPC error. A server's failure
// that the host explained goes the same way, as an internal error.
//
// Server-initiated requests go to the client through the chain (host
// guards them); on HTTP they travel on the stream of the client's request
// they are asked for: the one whose upstream call they came with when the
// upstream says (mcp.CallOf: streamable HTTP), else the client's newest
// request in flight to that server (stdio does not say). One asked for a
// call that has ended is refused.
//
// A client that goes away cancels its calls upstream: over HTTP by the
// rules of httpserver (its POST closed before an answer it could resume),
// over a Conn by its end (Serve). `nexus serve` on stdio uses ServeDrain
// instead: the end of its input answers what was read first (drain_timeout).
// Over HTTP a request without Origin must name the gateway in Host by an
// IP address, localhost or an allowed host (checkHost: DNS rebinding).
//
// Both eras (MCP 2026-07-28 beside 2025-11-25 and earlier). A request
// that carries its version in params._meta (io.modelcontextprotocol/
// protocolVersion) with no initialize before it is a modern request,
// served on its own: its client capabilities, client info and log level
// are in its _meta (mcp.RequestMetaOf on its context), a version Nexus
// does not speak gets -32022 with mcp.AllVersions, server/discover says
// what Nexus speaks, and every result carries resultType. Over HTTP they
// arrive on one internal session per agent (httpserver.Session.Modern,
// no session store); on stdio on the same input as a legacy client's
// would. An initialize makes the session legacy (the spec's versioning
// page). Modern requests run on the agent's shared connections, and so
// are the same events to the chain, the lockfile and the audit log as a
// legacy client's. What the revision removed (ping, logging/setLevel,
// resources/subscribe and unsubscribe, tasks/result and tasks/list) is
// refused for them; the Peer still answers ping itself.
//
// Tasks: a modern agent that declares the tasks extension
// (io.modelcontextprotocol/tasks) gets a task of its own session when the
// upstream answers its call with one, modern or 2025-11-25; the host
// follows the upstream's task, what it asks passes the chain and waits
// for the agent's tasks/update (a 2025-11-25 server asks by requests to
// the client while tasks/result waits: the bridge brings those to the
// task, the one their related-task _meta names, else the agent's newest
// of that server), the answers pass the chain's response half, and
// tasks/get inlines the result the chain saw (tasks_modern.go). Until
// it is a task, such a call is a bridged call like any modern call: a
// legacy server's questions are input_required rounds. A legacy agent's task-augmented call
// (tasks.go) to a modern upstream is followed the same way by the host,
// the task's questions reaching the agent as server-initiated requests.
//
// Lists, and resources/read, carry ttlMs and cacheScope "private" (each
// list is the agent's own, whatever a server said): Options.CacheTTL
// (gateway `cache_ttl`, default 1 minute) for lists, 0 for a list that
// left out servers, and for a read no more than its server gave.
// A server's log reaches a modern request only if it asked with
// _meta logLevel, on that request's stream. subscriptions/listen streams
// get the list_changed and resources/updated their client opted in to,
// from the agent's own connections, after the acknowledgment, each tagged
// with the subscriptionId.
//
// A legacy client in front of a modern upstream gets what a legacy
// server would have given it: its calls, reads and prompts ask the
// upstream for logs (_meta logLevel: the session's logging/setLevel, else
// all; forwardLog filters), its resources/subscribe becomes the
// upstream's subscriptions/listen (mcp.Client.Subscribe), and an
// upstream's InputRequiredResult is fulfilled by the host's client
// through the session's handlers: server-initiated requests to it,
// through the chain, then the retry with the exact requestState.
//
// Tracing: every request the gateway serves, lists included, tells the
// host the session's negotiated version and its transport
// (engine.Served: "tcp" over HTTP, "pipe" on stdio), and the _meta trace
// context of calls, reads, prompts and lists is continued (a list under
// a span of the host's, TraceList) and passed upstream.
//
// A modern client is never sent a request. A modern upstream's
// InputRequiredResult (Multi Round-Trip Requests) passes to the agent
// once the chain has judged each input request as it judges the
// server-initiated request it replaces (engine.WithAnswersInput is the
// seam with the host's client; a refused one refuses the call), and the
// agent's retry (inputResponses, requestState) is passed upstream. The
// attempts are one call, decided once (engine.Attempt): the sealed
// requestState carries the call's id, the params as the first
// attempt's policies left them, and the questions as the agent got
// them. A retry skips the permission and the policies' request phase
// (the first attempt's record, allowed and flagged input_required, is
// the call's decision; each retry is recorded flagged "retry" under the
// same call id, with its outcome: a requestState may be replayed until
// it expires, and a replay runs the upstream again) and sends those
// params; each answer first
// passes the chain's response half beside the question it answers, as
// a server request's answer does (audited under the call, flagged
// "answer"; a refused one refuses the call, and an answer to a question
// never asked is invalid params): nothing reaches the upstream before.
//
// Every question an upstream asks and every answer to it passes the
// chain (the sampling, elicitation and roots links) and the audit log,
// whichever way it goes:
//   - legacy upstream, modern agent (the bridge): the server's request
//     passes the request half before it reaches the bridge (the host
//     guards the shared connections' handlers), its answer the response
//     half on its way back, one record under the call (the bridge names
//     the call before the chain runs, engine SessionOptions.CallOf, so a
//     refused question is under it too). The answer comes in a retry
//     (resume) or early: inputResponses a request brought without a
//     requestState, given to the question of its key (take), the same
//     way back.
//   - modern upstream, retry with requestState: the questions passed the
//     request half before the agent saw them (passInput), and the
//     answers pass the response half against the questions the state
//     carries (guardAnswers).
//   - modern upstream, inputResponses without a requestState: they answer
//     no question the chain judged, so the first attempt goes up without
//     them (retry; a debug line says so). If the upstream then asks, and
//     they answer every question it asks once the chain has judged the
//     questions, the gateway retries with them at once, as the agent's
//     retry would go (earlyRetry: guardAnswers, audited as a retry; keys
//     not asked are ignored); else the agent is asked.
//   - tasks/update: a modern upstream task's questions pass passInput,
//     their answers guardAnswer (taskAsk); a 2025-11-25 server's task
//     asks by server requests, guarded as in the bridge (followed.ask).
//   - legacy agent: a legacy or modern upstream's questions reach it as
//     server-initiated requests over its session (a modern upstream's
//     input_required fulfilled by the host's client), guarded the same
//     way; the answers go upstream only past the response half.
//
// The era bridge (bridge.go, state.go): a legacy upstream (2025-11-25
// and earlier) asks the client mid-call. The agent's shared connections
// declare sampling, elicitation and roots, and a modern call runs as a
// bridged call: the upstream call outlives the attempt, and what the
// server asks during it (the questions that come within gatherQuiet of
// each other are one round; a request whose last calls asked one
// question each is handed out as soon as every request its connection
// read has reached the bridge) becomes an input_required result whose
// requestState is sealed (AES-256-GCM, Options.StateKey: gateway
// state_key or NEXUS_STATE_KEY, shared by the replicas; else one per
// process, warned) and names the agent, the request (method, name or
// uri, an argument hash), the replica holding the call, the call and its
// round (good for one retry) and an expiry (Options.InputTTL, after which
// the call is cancelled upstream). Its inputRequests keys are the
// server's own (mcp.MetaInputKey in the request's _meta) or
// "<method>-<n>". The retry's answers go to the waiting server requests
// and the call goes on, perhaps to another round; a state that is
// tampered with, expired, replayed, another agent's or another request's,
// and answers to questions never asked, are invalid params and reach no
// server; a state another replica holds is forwarded to it (below). A
// question the request's
// capabilities did not declare refuses the call (-32021), except
// roots/list, which the gateway answers from the agent's configured
// roots (agent `roots`, else the config's), as it does outside any call;
// sampling and elicitation outside any call are refused, saying why.
// Which call a server's request belongs to: over streamable HTTP, the
// call on whose response stream it came (mcp.CallOf), which may be a
// call of a legacy session sharing the connection (its client declared
// no sampling, elicitation or roots): then it is outside any modern
// call. Where the transport does not say (stdio), the agent's newest
// running bridged call to that server, else its newest parked one, whose
// next round asks it; but if a legacy session's call to that server is
// in flight on the connection too, a sampling or elicitation request
// cannot be tied to one call and is refused, saying why (give the
// legacy client the capability, so it gets connections of its own, or
// reach the server over streamable HTTP) and logged; roots/list gets the
// agent's configured roots. The audit record of a server's request
// names its call and that call's session. Bridged calls run on runners, goroutines
// that keep their grown stacks between calls. What the server sends during
// a call follows its current attempt: progress with that attempt's
// token, logs if that attempt asked (its _meta logLevel), on that
// attempt's stream, or back over the bus to the replica that forwarded
// it (relay.go); nothing while the call waits between attempts. At
// Close, the servers' waiting requests are refused first, and their
// calls get a moment (closeDrain) to end before the connections close. The call is one event to the
// chain and one audit record (audit.Record.Call names it; each question
// and answer passes the chain as the server's request). Parked calls are
// bounded (MaxParked, MaxParkedPerAgent); an agent's connection that
// modern calls use ends once idle (UpstreamIdle) unless a session still
// uses it, and such connections are bounded (MaxUpstreams,
// MaxUpstreamsPerAgent), a call past a bound refused with a retryable
// error.
//
// Replicas: with a session store (HTTPOptions.Store, Redis or Valkey), any
// replica serves any request of any session, with no sticky routing. The
// session's record (principal, agent, negotiated version, the client's
// initialize params, log level, subscriptions) is in the store; a replica
// that gets a request for a session it has not seen restores it from
// there, opens its own upstream connections lazily, and is told by the
// others when they change the record. Requests the gateway sends a client
// carry the sending replica in their id, so the answer, POSTed to any
// replica, reaches it. A response stream is copied to the store once it
// becomes SSE, so a client whose replica died resumes it elsewhere and
// learns there that its call may not have finished (a retryable error,
// never a silent loss and never a second run). See httpserver.Shared.
// A modern call waiting for its input lives on the replica whose
// upstream connection runs it; its retry, wherever it lands, is
// forwarded there over the store's bus (relay.go: each replica listens
// on a channel of its own, the owner opens and checks the state itself
// and answers on the sender's). If that replica is gone (nothing listens
// on its channel, it did not take the retry in time, or it fell silent
// while running it) the agent gets a retryable error (-32603, data
// {"retryable":true}) and the call never runs twice. Without a store a
// state another replica holds gets that error at once.
package gateway
