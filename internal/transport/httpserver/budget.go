package httpserver

import (
	"context"
	"sync"
	"time"
)

// budget bounds the bytes of request and response bodies in flight, in
// all and per principal, so that one agent's large calls neither exhaust
// the process's memory nor keep the others out.
type budget struct {
	max, perMax int64
	wait        time.Duration

	mu      sync.Mutex
	total   int64
	per     map[string]int64
	changed chan struct{} // closed when bytes are released; made when someone waits
}

func newBudget(max, perMax int64, wait time.Duration) *budget {
	return &budget{max: max, perMax: perMax, wait: wait, per: map[string]int64{}}
}

// fits says whether n more bytes for p stay within both caps. A
// principal with nothing in flight may always take one body, so a body
// over its share (which validation keeps from happening) still passes
// alone. Called with b.mu held.
func (b *budget) fits(p string, n int64) bool {
	mine := b.per[p]
	if mine == 0 {
		return b.total+n <= b.max || b.total == 0
	}
	return b.total+n <= b.max && mine+n <= b.perMax
}

// acquire takes n bytes for p, waiting up to b.wait for others to be
// released; false (nothing taken) when they were not, or ctx ended. The
// answer says which cap was full: "agent" or "all".
func (b *budget) acquire(ctx context.Context, p string, n int64) (bool, string) {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.fits(p, n) {
			b.take(p, n)
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return true, ""
		}
		full := "all"
		if b.per[p]+n > b.perMax && b.perMax < b.max {
			full = "agent"
		}
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		ch := b.changed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(b.wait)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			return false, full
		case <-ctx.Done():
			return false, full
		}
	}
}

// charge counts n bytes for p without waiting: a response being written
// cannot wait, but what it holds keeps new requests out.
func (b *budget) charge(p string, n int64) {
	b.mu.Lock()
	b.take(p, n)
	b.mu.Unlock()
}

func (b *budget) take(p string, n int64) {
	b.total += n
	b.per[p] += n
}

// release gives back n bytes of p's.
func (b *budget) release(p string, n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.total -= n
	if b.per[p] -= n; b.per[p] <= 0 {
		delete(b.per, p)
	}
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	b.mu.Unlock()
}

// held is what p holds, and what all hold.
func (b *budget) held(p string) (mine, all int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.per[p], b.total
}
