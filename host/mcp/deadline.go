package mcp

import (
	"sync"
	"time"
)

// ReadDeadline keeps the read deadline of a descriptor that a DirectReader
// reads from (a pipe): the deadline of the direct read in progress, an
// InterruptRead that came before or during it, and an upper bound for
// every read (stdio sets one once the server has exited). Only the reading
// goroutine calls Arm, Clear and TimedOut; any goroutine may Interrupt.
type ReadDeadline struct {
	set func(time.Time) error // the descriptor's SetReadDeadline

	mu          sync.Mutex
	now         time.Time // the deadline the descriptor has
	bound       time.Time
	interrupted bool
}

// NewReadDeadline manages the deadline that set (a SetReadDeadline) gives.
func NewReadDeadline(set func(time.Time) error) *ReadDeadline {
	return &ReadDeadline{set: set}
}

// Arm gives the descriptor deadline d for a direct read, keeping one that
// is nearly due (see nearlyDue), or returns ErrReadTimeout when an
// interrupt came first.
func (r *ReadDeadline) Arm(d time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.interrupted {
		r.interrupted = false
		return ErrReadTimeout
	}
	if !nearlyDue(r.now, d) {
		r.apply(d)
	}
	return nil
}

// Clear removes a direct read's deadline (not the bound) before a plain
// read, and forgets an interrupt meant for a direct read.
func (r *ReadDeadline) Clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interrupted = false
	r.apply(time.Time{})
}

// Interrupt ends a direct read in progress, or the next one.
func (r *ReadDeadline) Interrupt() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interrupted = true
	r.apply(time.Unix(1, 0))
}

// TimedOut is called after a read failed with os.ErrDeadlineExceeded. It
// reports whether the bound may have ended it (then the read is over for
// good and ReadMessage should say why), rather than the direct read's own
// deadline or an interrupt.
func (r *ReadDeadline) TimedOut() (bounded bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.interrupted = false
	return !r.bound.IsZero()
}

// Bound caps every later read at d, starting with any read in progress.
func (r *ReadDeadline) Bound(d time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bound = d
	r.now = time.Time{} // force the write below
	r.apply(d)
}

// apply gives the descriptor d, or the bound if that is earlier (or d is
// zero), unless it has it already; mu is held.
func (r *ReadDeadline) apply(d time.Time) {
	if !r.bound.IsZero() && (d.IsZero() || r.bound.Before(d)) {
		d = r.bound
	}
	if !d.Equal(r.now) {
		_ = r.set(d)
		r.now = d
	}
}
