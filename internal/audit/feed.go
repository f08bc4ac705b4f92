package audit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Feed hands every decision record to watchers in this process (the
// console's live stream) as the audit log gets it: the same record, so a
// watcher sees the arguments only as the log holds them (redacted, or
// their digest). It never slows a call: each subscriber has a bounded
// buffer, and a record that does not fit is dropped for that subscriber
// and counted. With no subscriber, Active is false and the host does not
// build records for it. A nil *Feed is a feed nobody watches.
type Feed struct {
	mu   sync.RWMutex
	subs map[*Sub]struct{}
	n    atomic.Int32 // len(subs), read on every call without the lock
	next atomic.Uint64
}

// Decision is one record as the feed delivers it, with how long the
// decision point took (the record has its start only).
type Decision struct {
	Record
	Latency time.Duration
	// ID numbers the feed's decisions from 1, in the order published: a
	// watcher that keeps some finds one again by it.
	ID uint64
}

// Sub is one subscriber of a Feed: C delivers its decisions until Close.
type Sub struct {
	C       <-chan Decision
	c       chan Decision
	f       *Feed
	dropped atomic.Uint64
}

// NewFeed makes a feed with no subscribers.
func NewFeed() *Feed { return &Feed{subs: map[*Sub]struct{}{}} }

// Active says whether anyone subscribes: only then is a record worth
// making for the feed.
func (f *Feed) Active() bool { return f != nil && f.n.Load() > 0 }

// Subscribe adds a subscriber whose buffer holds up to buf decisions
// (at least 1).
func (f *Feed) Subscribe(buf int) *Sub {
	c := make(chan Decision, max(buf, 1))
	s := &Sub{C: c, c: c, f: f}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	f.n.Store(int32(len(f.subs)))
	f.mu.Unlock()
	return s
}

// Close ends the subscription and closes C. Safe to call twice.
func (s *Sub) Close() {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[s]; !ok {
		return
	}
	delete(f.subs, s)
	f.n.Store(int32(len(f.subs)))
	close(s.c)
}

// Dropped counts the decisions this subscriber lost because its buffer
// was full.
func (s *Sub) Dropped() uint64 { return s.dropped.Load() }

// Publish hands d to every subscriber that has room, and counts a drop
// for each that has not. The record's slices are shared with the
// caller's: neither side changes them after Publish.
func (f *Feed) Publish(d Decision) {
	if !f.Active() {
		return
	}
	d.ID = f.next.Add(1)
	f.mu.RLock()
	for s := range f.subs {
		select {
		case s.c <- d:
		default:
			s.dropped.Add(1)
		}
	}
	f.mu.RUnlock()
}
