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

// reserve is the capacity an instance's memory gets up front (bounded by
// its limit): a Go guest grows its memory a little at a time, and growing
// a Go slice means copying it, so the buffer starts as large as the
// typical filter ever needs. Untouched pages cost address space, not RAM.
const reserve = 32 << 20

func (a *allocator) Allocate(capacity, _ uint64) experimental.LinearMemory {
	return &linearMemory{a: a, buf: make([]byte, 0, max(min(capacity, a.limit), min(reserve, a.limit)))}
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
