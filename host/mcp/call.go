package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// The caller's side of a request. Contract:
//   - A call registers in pending under a fresh id before its frame is
//     written, so a reply can never arrive for an unknown id.
//   - Every call ends exactly once: with its reply, the session's end, or
//     its context's end or deadline (the reaper times out calls without
//     progress; both tell the other side with notifications/cancelled,
//     abandon). forget then removes it from every table; the call record
//     goes back to its pool only when it got its reply (finish), since an
//     abandoned one may still be sent to.
//   - Progress for a call restarts its timeout, up to MaxTimeout.
//   - Over a DirectReader the caller waits by reading its own reply
//     (readOwn, in role.go); otherwise it waits on its channel.

// CallOption changes one outgoing request.
type CallOption func(*callConfig)

type callConfig struct {
	timeout    time.Duration
	onProgress func(Progress)
	token      string
}

// applyOptions builds a call's configuration. It is a function of its own
// so that the configuration escapes to the heap only when there are
// options (they take its address).
func applyOptions(opts []CallOption) callConfig {
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// WithTimeout overrides the peer's request timeout for this call.
func WithTimeout(d time.Duration) CallOption { return func(c *callConfig) { c.timeout = d } }

// WithProgress routes notifications/progress carrying token to fn, and
// restarts the request timeout on each (bounded by MaxTimeout). The caller
// puts the same token into the request's `_meta.progressToken`; NewProgressToken
// makes one.
func WithProgress(token json.RawMessage, fn func(Progress)) CallOption {
	return func(c *callConfig) { c.onProgress = fn; c.token = string(token) }
}

// NewProgressToken returns a token unique among this peer's requests.
func (p *Peer) NewProgressToken() json.RawMessage {
	return strconv.AppendInt(nil, p.nextToken.Add(1), 10)
}

// Call sends a request and decodes the result into result (if non-nil).
func (p *Peer) Call(ctx context.Context, method string, params, result any, opts ...CallOption) error {
	raw, err := p.CallRaw(ctx, method, params, opts...)
	if err != nil {
		return err
	}
	return decodeRaw(method, raw, result)
}

// decodeRaw decodes raw, a call's own copy of its result (CallRaw), into
// result (nothing when nil), with the type's own decoder when it has one.
func decodeRaw(method string, raw json.RawMessage, result any) error {
	if result == nil {
		return nil
	}
	// raw is this call's own copy of the response (onResponse).
	if d, ok := result.(ownedDecoder); ok {
		if err := d.decodeOwned(raw); err != nil {
			return fmt.Errorf("%s: malformed result: %w", method, err)
		}
		return nil
	}
	if d, ok := result.(decoder); ok {
		if err := d.decodeJSON(raw); err != nil {
			return fmt.Errorf("%s: malformed result: %w", method, err)
		}
		return nil
	}
	if err := json.Unmarshal(raw, result); err != nil {
		return fmt.Errorf("%s: malformed result: %w", method, err)
	}
	return nil
}

// CallRaw sends a request and returns the raw result.
func (p *Peer) CallRaw(ctx context.Context, method string, params any, opts ...CallOption) (json.RawMessage, error) {
	var cfg callConfig
	if len(opts) > 0 {
		cfg = applyOptions(opts)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	id := p.nextID.Add(1)
	c := callPool.Get().(*call)
	c.deadline = time.Time{}
	c.onProgress = cfg.onProgress
	c.token = cfg.token
	c.ctx = ctx
	if c.onProgress != nil && c.reset == nil {
		c.reset = make(chan struct{}, 1)
	}
	timeout := cfg.timeout
	if timeout <= 0 {
		timeout = p.opts.Timeout
	}
	// deadline is when the call times out unless ctx ends it first (zero:
	// ctx's deadline rules); hard bounds a call that progress keeps alive.
	var deadline, hard time.Time
	_, hasDeadline := ctx.Deadline()
	if !hasDeadline || cfg.timeout > 0 || c.onProgress != nil {
		now := time.Now()
		if !hasDeadline || cfg.timeout > 0 {
			deadline = now.Add(timeout)
		}
		if c.onProgress != nil {
			hard = now.Add(p.opts.MaxTimeout)
		}
	}

	p.inflight.Add(1)
	p.mu.Lock()
	p.pending[id] = c
	if c.onProgress != nil {
		p.progress[c.token] = c
	} else if !deadline.IsZero() {
		// The reaper times it out: one timer for the session instead
		// of one per call. (Progress moves a deadline; those calls keep
		// timers of their own.)
		c.deadline = deadline
		p.armReaper(deadline)
	}
	p.mu.Unlock()

	var err error
	if p.rw != nil {
		// The exchange may run on this goroutine: bound it like the call
		// (progress can extend a call, so such calls get the hard limit;
		// the timeout then ends them through the cancellation).
		dl := deadline
		if c.onProgress != nil {
			dl = hard
		}
		err = p.sendRequest(ctx, dl, id, method, params)
	} else {
		err = p.send(ctx, id, method, params)
	}
	if err != nil {
		p.forget(id, c)
		return nil, err
	}
	if p.direct != nil && p.acquire(c) {
		p.readOwn(ctx, c, &deadline, hard, timeout)
		select {
		case r := <-c.ch:
			return p.settle(id, c, r, method, timeout)
		default:
		}
	} else if p.direct == nil && p.acquire(nil) {
		// The role was free (a handler served on the goroutine that read
		// its request, and now asks the other side): a reply is awaited,
		// so a background reader takes the role now, as release does,
		// rather than when the idle timer fires. That wait was most of
		// a server's elicitation or sampling round trip (about 1 ms
		// against 0.2 ms; BenchmarkAskRoundTrip).
		p.newReader()
	}

	var timerC <-chan time.Time
	var timer *time.Timer
	if !deadline.IsZero() && c.onProgress != nil {
		timer = time.NewTimer(time.Until(deadline))
		defer timer.Stop()
		timerC = timer.C
	}
	var hardC <-chan time.Time
	if !hard.IsZero() {
		hardT := time.NewTimer(time.Until(hard))
		defer hardT.Stop()
		hardC = hardT.C
	}
	for {
		select {
		case r := <-c.ch:
			return p.settle(id, c, r, method, timeout)
		case <-c.reset:
			if timer != nil {
				timer.Reset(timeout)
			}
		case <-timerC:
			p.abandon(id, c, "timeout")
			return nil, &TimeoutError{Method: method, After: timeout}
		case <-hardC:
			p.abandon(id, c, "timeout")
			return nil, &TimeoutError{Method: method, After: p.opts.MaxTimeout}
		case <-ctx.Done():
			p.abandon(id, c, ctx.Err().Error())
			return nil, ctx.Err()
		}
	}
}

// settle ends a call with what came through its channel: a reply, or the
// reaper's word that its deadline passed.
func (p *Peer) settle(id int64, c *call, r reply, method string, timeout time.Duration) (json.RawMessage, error) {
	if r.timedOut {
		p.abandon(id, c, "timeout")
		return nil, &TimeoutError{Method: method, After: timeout}
	}
	return p.finish(id, c, r)
}

// armReaper makes sure the reaper fires by deadline; mu is held.
func (p *Peer) armReaper(deadline time.Time) {
	if !p.reapAt.IsZero() && !deadline.Before(p.reapAt) {
		return // calls mostly share one timeout: nearly always taken
	}
	p.reapAt = deadline
	p.reaper.Reset(time.Until(deadline))
}

// reap times out the calls whose deadline has passed: each leaves the
// table with a timedOut reply (so that no late answer can land too), and
// a caller reading its own reply is interrupted. Then it arms itself for
// the next deadline.
func (p *Peer) reap() {
	now := time.Now()
	var due []*call
	p.mu.Lock()
	p.reapAt = time.Time{}
	var next time.Time
	for id, c := range p.pending {
		switch {
		case c.deadline.IsZero():
		case !now.Before(c.deadline):
			delete(p.pending, id)
			c.deadline = time.Time{}
			c.ch <- reply{timedOut: true}
			due = append(due, c)
		case next.IsZero() || c.deadline.Before(next):
			next = c.deadline
		}
	}
	if !next.IsZero() {
		p.armReaper(next)
	}
	p.mu.Unlock()
	for _, c := range due {
		p.interrupt(c)
	}
}

// finish ends a call that got its reply (an empty one: the session ended).
func (p *Peer) finish(id int64, c *call, r reply) (json.RawMessage, error) {
	p.forget(id, c)
	callPool.Put(c)
	if r.err != nil {
		return nil, r.err
	}
	if r.failed != nil {
		return nil, r.failed
	}
	if r.result == nil {
		return nil, p.Err()
	}
	return r.result, nil
}

// forget removes a finished call from the tables.
func (p *Peer) forget(id int64, c *call) {
	p.inflight.Add(-1)
	p.mu.Lock()
	delete(p.pending, id)
	c.deadline = time.Time{}
	c.ctx = nil
	if c.onProgress != nil {
		delete(p.progress, c.token)
	}
	p.mu.Unlock()
	c.onProgress = nil
	c.token = ""
	if c.reset != nil {
		select {
		case <-c.reset:
		default:
		}
	}
}

// abandon gives up on a request and tells the other side, so it can stop
// working on it. The call object is not reused: a late reply may still land
// in its channel.
func (p *Peer) abandon(id int64, c *call, reason string) {
	p.forget(id, c)
	if p.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	type cancelled struct {
		RequestID int64  `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}
	if err := p.Notify(ctx, NotificationCancelled, cancelled{id, reason}); err != nil {
		p.log.Debug("could not send cancellation", "id", id, "error", err)
	}
}
