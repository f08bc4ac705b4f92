package gateway

import (
	"context"
	"github.com/nexus-mcp/nexus/internal/engine"
	"sort"
	"time"

	"github.com/nexus-mcp/nexus/internal/registry"
)

// What the console (internal/console) reads of the gateway and does to it.

// SessionInfo is a live downstream session as the console lists it.
type SessionInfo struct {
	ID      string // as the audit log names it (never the HTTP session id)
	Agent   string
	Version string // the protocol version negotiated; "" before initialize
	Client  string // the client's name and version, as it said
	Modern  bool   // an agent's internal session for its 2026-07-28 requests
}

// List is the live downstream sessions, ordered by agent and id.
func (g *Gateway) List() []SessionInfo {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		list = append(list, s)
	}
	g.mu.Unlock()
	out := make([]SessionInfo, 0, len(list))
	for _, s := range list {
		s.mu.Lock()
		i := SessionInfo{ID: s.id, Agent: s.agent, Version: s.version, Modern: s.modernOnly}
		if s.init != nil {
			i.Client = s.init.ClientInfo.Name + " " + s.init.ClientInfo.Version
		}
		s.mu.Unlock()
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Agent != out[b].Agent {
			return out[a].Agent < out[b].Agent
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// End ends the legacy session with the audit log's id: its connection
// closes, its calls in flight are cancelled, and its record leaves the
// store. It reports whether there was such a session.
func (g *Gateway) End(id string) bool {
	var found *session
	g.mu.Lock()
	for s := range g.sessions {
		if s.id == id && !s.modernOnly {
			found = s
			break
		}
	}
	g.mu.Unlock()
	if found == nil {
		return false
	}
	if st := found.stored; st != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st.st.Delete(ctx, st.id) // best effort: the record expires anyway
		cancel()
	}
	found.peer.Close()
	return true
}

// Servers is every configured server's state as the agents' sessions
// see it. Their connections are their agents' own (the host's serve
// /readyz only), so a server counts as connected when some agent's
// connections to it are up; else it shows the host's state, or the last
// error an agent's connections met.
func (g *Gateway) Servers() []registry.Status {
	out := g.h.Servers()
	g.mu.Lock()
	ups := make([]*engine.Host, 0, len(g.agents))
	for _, up := range g.agents {
		ups = append(ups, up)
	}
	g.mu.Unlock()
	at := make(map[string]int, len(out))
	for i, s := range out {
		at[s.Config.Name] = i
	}
	for _, up := range ups {
		for _, s := range up.Servers() {
			i, ok := at[s.Config.Name]
			if !ok {
				continue
			}
			cur := &out[i]
			if s.Connected && !cur.Connected || !cur.Connected && cur.Err == nil && s.Err != nil {
				*cur = s
			}
		}
	}
	return out
}

// Continuation is a modern agent's call that waits for the agent's input
// (MRTR): the bridge parked it (bridge.go), its upstream call running, until
// the agent's retry brings the answers or input_ttl ends it.
type Continuation struct {
	ID     string // the call's id, as the audit log names it
	Agent  string
	Server string
	Round  uint32   // which input_required round of the call it waits in
	Asks   []string // the methods of the server's questions it waits on
}

// Continuations is the calls waiting for their agents' input on this
// replica, ordered by agent and id. It reads the bridge's books and
// changes nothing.
func (g *Gateway) Continuations() []Continuation {
	br := g.br
	br.mu.Lock()
	list := make([]*bcall, 0, len(br.calls))
	for _, c := range br.calls {
		list = append(list, c)
	}
	br.mu.Unlock()
	// Each call's lock after the bridge's, never within it: the bridge
	// takes them the other way round (unpark).
	var out []Continuation
	for _, c := range list {
		c.mu.Lock()
		if c.parked && !c.ended {
			x := Continuation{ID: c.ID(), Agent: c.agent, Server: c.server, Round: c.round}
			for _, a := range c.pending {
				x.Asks = append(x.Asks, a.method)
			}
			out = append(out, x)
		}
		c.mu.Unlock()
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Agent != out[b].Agent {
			return out[a].Agent < out[b].Agent
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// EndContinuation ends the waiting call with the id, as input_ttl would:
// it leaves the books at once (a retry carrying its state is told it was
// ended), its server's questions are answered as outside any call, and
// its upstream call is cancelled. It reports whether such a call waited.
func (g *Gateway) EndContinuation(id string) bool {
	br := g.br
	br.mu.Lock()
	var found *bcall
	for _, c := range br.calls {
		if c.ID() == id {
			found = c
			break
		}
	}
	br.mu.Unlock()
	if found == nil {
		return false
	}
	c := found
	c.mu.Lock()
	if !c.parked || c.ended {
		c.mu.Unlock()
		return false
	}
	pending := br.markEnded(c)
	c.mu.Unlock()
	br.finish(c, pending, "names a call a person ended in the gateway's console")
	c.cancel()
	return true
}
