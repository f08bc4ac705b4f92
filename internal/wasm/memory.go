package wasm

import "github.com/tetratelabs/wazero/experimental"

// allocator backs an instance's linear memory and enforces its limit. It
// refuses a memory.grow past the limit (the guest sees -1, as for any
// failed grow) and remembers the size asked for, so a guest that then
// traps or exits is reported as having hit the memory limit, not as a
// mystery crash.
type allocator struct {
	limit   uint64
	refused uint64 // the largest size refused during the current call
}

// Allocate makes an instance's memory. It reserves three times the
// initial size up front (at least 1 MiB, at most the limit): a Go guest
// grows its memory a little at a time and growing a Go slice means copying
// it, while reserving the whole limit would mean clearing it at every
// instance start. Memory stays a Go slice, not a mapping of its own, so
// that closing an instance can never pull memory from under a call.
func (a *allocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &linearMemory{a: a, buf: make([]byte, 0, min(a.limit, max(3*capacity, 1<<20)))}
}

type linearMemory struct {
	a       *allocator
	buf     []byte
	started bool
}

func (m *linearMemory) Reallocate(size uint64) []byte {
	// The first call is the module's initial memory, checked against the
	// limit at load; refusing it here would crash the runtime.
	if m.started && size > m.a.limit {
		m.a.refused = max(m.a.refused, size)
		return nil
	}
	m.started = true
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := max(size, min(2*uint64(cap(m.buf)), m.a.limit))
	buf := make([]byte, size, grown)
	copy(buf, m.buf)
	m.buf = buf
	return buf
}

func (m *linearMemory) Free() { m.buf = nil }
