package host

import "github.com/nexus-mcp/nexus/host/mcp"

// PIDs returns, by server, the process id of the last stdio process the
// host started for it.
func (h *Host) PIDs() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int{}
	for name, sc := range h.stdio {
		out[name] = sc.PID()
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
