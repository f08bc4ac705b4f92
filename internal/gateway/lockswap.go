package gateway

import (
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/lock"
)

// watchLock makes a lockfile swap that changes which tools an agent
// sees (an accepted definition released, a pin dropped) announced to
// that agent's sessions, as a server's own list_changed would be:
// notifications/tools/list_changed to an initialized (legacy) session,
// and on each subscriptions/listen stream that opted in to tools.
func (g *Gateway) watchLock() {
	g.h.OnLockSwap(g.lockSwapped)
}

// lockSwapped asks each session's upstream, once per upstream and agent,
// whether the swap changed the agent's tools there, and announces it to
// the sessions where it did. It runs on SetLock's caller: announce only
// arms a timer.
func (g *Gateway) lockSwapped(old, new *lock.Lock) {
	g.mu.Lock()
	list := make([]*session, 0, len(g.sessions))
	for s := range g.sessions {
		list = append(list, s)
	}
	g.mu.Unlock()
	type key struct {
		up    *engine.Host
		agent string
	}
	changed := map[key]bool{}
	for _, s := range list {
		up := s.host()
		k := key{up, s.agent}
		c, seen := changed[k]
		if !seen {
			c = up.LockSwapChanges(s.agent, old, new)
			changed[k] = c
		}
		if c {
			s.announce("tools")
		}
	}
}
