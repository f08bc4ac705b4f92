package host

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
