package engine

import (
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// PIDs returns, by server, the process id of each connected stdio server
// the host started.
func (h *Host) PIDs() map[string]int {
	out := map[string]int{}
	for name, c := range h.reg.Live("") {
		if sc, ok := c.Peer().Conn().(*stdio.Conn); ok {
			out[name] = sc.PID()
		}
	}
	return out
}

// SchemaCacheLen is how many distinct schemas the host has compiled.
func (h *Host) SchemaCacheLen() int {
	h.sch.mu.Lock()
	defer h.sch.mu.Unlock()
	return len(h.sch.cache)
}

// Withheld is the lockfile's verdict on server's tool, from version ver
// of its tool list.
func (h *Host) Withheld(server string, t *mcp.Tool, ver uint64) string {
	return h.withheld(server, t, ver)
}

// LockCacheLen is how many tool verdicts the host keeps.
func (h *Host) LockCacheLen() int {
	h.lockv.mu.Lock()
	defer h.lockv.mu.Unlock()
	return len(h.lockv.seen)
}

// ForgetLockVerdicts empties the lockfile's verdict cache, so the next
// listing checks every tool again.
func (h *Host) ForgetLockVerdicts() {
	h.lockv.mu.Lock()
	h.lockv.seen = nil
	h.lockv.mu.Unlock()
}
