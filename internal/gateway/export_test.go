package gateway

import (
	"context"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// SessionLevel is the least log severity the replica's instance of a shared
// session forwards (-1: none set, or no instance here).
func SessionLevel(hh *HTTPHandler, id string) int {
	hh.mu.Lock()
	s := hh.states[id]
	hh.mu.Unlock()
	if s == nil {
		return -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// ServeModern is serveModern: the session httpserver hands the gateway
// for an agent's modern requests (httpserver.Session.Modern).
func (g *Gateway) ServeModern(ctx context.Context, conn mcp.Conn, agent string) error {
	return g.serveModern(ctx, conn, agent)
}

// AgentUpstream is agent's shared upstream connections (made on first
// use), as modern requests use them.
func (g *Gateway) AgentUpstream(agent string) *engine.Host {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.agentHost(agent)
}

// Relay makes the gateway forward retries to the replicas holding their
// calls over st, and take theirs, as an HTTP handler with a store does.
func (g *Gateway) Relay(st store.Store) { g.br.startRelay(st) }

// Deafen stops the gateway's relay, as a replica that died would: nothing
// listens on its channel any more. Its calls stay (the test ends them).
func (g *Gateway) Deafen() {
	g.br.mu.Lock()
	r := g.br.relay
	g.br.mu.Unlock()
	r.close()
}

// Held is how many questions of server wait in the inboxes of agent's
// bridged calls (asked while parked, for the next round).
func Held(g *Gateway, agent, server string) int {
	n := 0
	for _, c := range g.br.running(agent, server) {
		c.mu.Lock()
		n += len(c.inbox)
		c.mu.Unlock()
	}
	return n
}

// Solo reports whether the bridge hands out server's rounds of the tool
// name without the gather window (isSolo).
func Solo(g *Gateway, server, name string) bool {
	return g.br.isSolo(&bcall{server: server, bind: binding{method: mcp.MethodToolsCall, target: name}})
}
