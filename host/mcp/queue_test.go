package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var errStuck = errors.New("pipe is stuck")

// stuckWriter is a batching conn whose first write blocks until released
// and whose every write fails.
type stuckWriter struct {
	started, release, closed chan struct{}
	first, closeOnce         sync.Once
}

func newStuckWriter() *stuckWriter {
	return &stuckWriter{started: make(chan struct{}), release: make(chan struct{}), closed: make(chan struct{})}
}

func (w *stuckWriter) ReadMessage() ([]byte, error) { <-w.closed; return nil, ErrClosed }

func (w *stuckWriter) WriteMessage(ctx context.Context, msg []byte) error {
	return w.WriteFrames(ctx, msg)
}

func (w *stuckWriter) WriteFrames(context.Context, []byte) error {
	first := false
	w.first.Do(func() { first = true; close(w.started) })
	if first {
		<-w.release
	}
	return errStuck
}

func (w *stuckWriter) Close() error { w.closeOnce.Do(func() { close(w.closed) }); return nil }

// Requests queued behind a write in progress do not wait for it; when
// their batch cannot be written, their calls end with the error at once
// rather than at their timeout.
func TestQueuedRequestsLearnOfFailedWrite(t *testing.T) {
	w := newStuckWriter()
	p := NewPeer(w, PeerOptions{Timeout: time.Minute})
	p.Start()
	defer p.Close()

	const queued = 5
	errs := make(chan error, queued+1)
	call := func() {
		_, err := p.CallRaw(context.Background(), "x/y", nil)
		errs <- err
	}
	go call() // becomes the writer and blocks
	<-w.started
	for range queued {
		go call()
	}
	eventually(t, "the requests queue behind the write", func() bool { return queuedIDs(p) == queued })
	close(w.release)
	for range queued + 1 {
		select {
		case err := <-errs:
			if !errors.Is(err, errStuck) {
				t.Fatalf("call ended with %v, want the write error", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a queued call is still waiting after its batch failed")
		}
	}
}

// roundWriter answers requests in rounds: once every caller has a request
// outstanding, all the replies become readable at once, as when a server
// answers a burst. It counts its writes.
type roundWriter struct {
	callers int
	replies chan []byte

	mu     sync.Mutex
	held   [][]byte
	writes int
	frames int
}

func (w *roundWriter) ReadMessage() ([]byte, error) {
	r, ok := <-w.replies
	if !ok {
		return nil, ErrClosed
	}
	return r, nil
}

func (w *roundWriter) WriteMessage(ctx context.Context, msg []byte) error {
	return w.WriteFrames(ctx, append(msg, '\n'))
}

func (w *roundWriter) WriteFrames(_ context.Context, frames []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	for _, f := range bytes.Split(bytes.TrimSuffix(frames, []byte("\n")), []byte("\n")) {
		w.frames++
		if m, err := ParseMessage(f); err == nil && m.HasID() {
			w.held = append(w.held, []byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`))
		}
	}
	if len(w.held) == w.callers {
		for _, r := range w.held {
			w.replies <- r
		}
		w.held = w.held[:0]
	}
	return nil
}

func (w *roundWriter) Close() error { return nil }

// Many callers at once share writes: a request's writer lets the callers
// that a burst of replies woke queue behind it (group commit), so the
// other side sees a fraction of a write per request, not one each. One
// processor makes the schedule repeatable: without group commit every
// caller then writes alone.
func TestConcurrentCallersShareWrites(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const callers, rounds = 32, 50
	w := &roundWriter{callers: callers, replies: make(chan []byte, callers)}
	p := NewPeer(w, PeerOptions{})
	p.Start()
	defer p.Close()
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if _, err := p.CallRaw(context.Background(), "x/y", nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%d requests in %d writes", w.frames, w.writes)
	if w.frames != callers*rounds || w.writes*4 > w.frames {
		t.Fatalf("%d requests in %d writes: want at least 4 requests per write", w.frames, w.writes)
	}
}

// gateWriter blocks its first Write until released and records every
// write.
type gateWriter struct {
	started, release chan struct{}
	first            sync.Once
	mu               sync.Mutex
	got              bytes.Buffer
}

func (w *gateWriter) Write(b []byte) (int, error) {
	first := false
	w.first.Do(func() { first = true; close(w.started) })
	if first {
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(b)
}

// gatedPeer is a started Peer over a StreamConn whose first write blocks
// until w.release is closed; nothing it sends is answered.
func gatedPeer(t *testing.T) (*Peer, *gateWriter) {
	pr, pw := io.Pipe()
	w := &gateWriter{started: make(chan struct{}), release: make(chan struct{})}
	p := NewPeer(NewStreamConn(pr, w, 0), PeerOptions{Timeout: time.Minute})
	p.Start()
	t.Cleanup(func() { p.Close(); pw.Close() })
	return p, w
}

// A caller that gives up while it is the writer does not take down the
// frames others queued behind it, over a conn whose writes cannot be
// interrupted (a StreamConn) as over one whose can.
func TestQueuedFramesOutliveWritersContext(t *testing.T) {
	p, w := gatedPeer(t)

	ctx, cancel := context.WithCancel(context.Background())
	go p.CallRaw(ctx, "a/first", nil) // the writer; blocks in Write
	<-w.started
	go p.CallRaw(context.Background(), "b/queued", nil)
	eventually(t, "the second request queues", func() bool { return queuedIDs(p) == 1 })
	cancel()
	close(w.release)
	eventually(t, "the queued request is written", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return bytes.Contains(w.got.Bytes(), []byte(`"b/queued"`))
	})
}

// eventually waits up to 5 s for cond, failing the test with what if it
// never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s, still not true: %s", what)
		}
	}
}

// queuedIDs is how many requests wait in p's write queue without their
// senders.
func queuedIDs(p *Peer) int {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	return len(p.pendIDs)
}

// silentConn takes every frame and never answers; it records the
// cancellations it is sent.
type silentConn struct {
	closed    chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	cancelled []string
}

func (c *silentConn) ReadMessage() ([]byte, error) { <-c.closed; return nil, ErrClosed }

func (c *silentConn) WriteMessage(_ context.Context, msg []byte) error {
	if m, err := ParseMessage(msg); err == nil && m.Method == NotificationCancelled {
		c.mu.Lock()
		c.cancelled = append(c.cancelled, string(m.Params))
		c.mu.Unlock()
	}
	return nil
}

func (c *silentConn) Close() error { c.closeOnce.Do(func() { close(c.closed) }); return nil }

// Calls time out at their own deadlines through the session's one reaper
// timer, whatever order they were made in: a short timeout made after
// long ones still fires first, each timed-out call tells the server, and
// a call that is answered in time is untouched by the reaper.
//
// No wall-clock upper bound: the long calls are made (and pending) before
// the short one, and the short one must time out while both are still
// pending. A reaper that kept its first, later deadline would time all
// three out in one sweep, so the long ones would be gone by then; the
// long timeout only has to outlast a delayed 50 ms timer on a loaded
// machine.
func TestCallsTimeOutAtTheirDeadlines(t *testing.T) {
	const long = 3 * time.Second
	conn := &silentConn{closed: make(chan struct{})}
	p := NewPeer(conn, PeerOptions{Timeout: long})
	p.Start()
	defer p.Close()

	type result struct {
		name    string
		err     error
		elapsed time.Duration
		pending int // calls still pending when this one returned
	}
	results := make(chan result, 4)
	call := func(name string, opts ...CallOption) {
		start := time.Now()
		_, err := p.CallRaw(context.Background(), name, nil, opts...)
		r := result{name: name, err: err, elapsed: time.Since(start)}
		p.mu.Lock()
		r.pending = len(p.pending)
		p.mu.Unlock()
		results <- r
	}
	pending := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.pending)
	}
	go call("long/a")
	go call("long/b")
	eventually(t, "the long calls are pending", func() bool { return pending() == 2 })
	go call("short/c", WithTimeout(50*time.Millisecond))

	var order []string
	for range 3 {
		var r result
		select {
		case r = <-results:
		case <-time.After(long + 10*time.Second):
			t.Fatalf("after %v, only %v timed out", long+10*time.Second, order)
		}
		var te *TimeoutError
		if !errors.As(r.err, &te) {
			t.Fatalf("%s: %v, want a TimeoutError", r.name, r.err)
		}
		order = append(order, r.name)
		if r.name == "short/c" {
			if r.pending != 2 {
				t.Fatalf("the 50 ms call timed out after %v with %d long calls left pending, want 2: it waited for the longer deadline", r.elapsed, r.pending)
			}
			if r.elapsed < 50*time.Millisecond {
				t.Fatalf("short/c timed out after %v, before its 50 ms", r.elapsed)
			}
		} else if r.elapsed < long {
			t.Fatalf("%s timed out after %v, before its %v", r.name, r.elapsed, long)
		}
	}
	if order[0] != "short/c" {
		t.Fatalf("timed out in order %v, want short/c first", order)
	}
	eventually(t, "3 cancellations are sent", func() bool {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return len(conn.cancelled) == 3
	})
	p.mu.Lock()
	left, armed := len(p.pending), !p.reapAt.IsZero()
	p.mu.Unlock()
	if left != 0 || armed {
		t.Fatalf("after the timeouts: %d calls pending, reaper armed %v", left, armed)
	}
}

// A batch over the kept size (1 MiB) is dropped after its write; the
// buffers that follow stay distinct, so frames queued behind a later
// write are not written over while that write is in progress.
func TestBatchesAfterHugeBatch(t *testing.T) {
	p, w := gatedPeer(t)

	// A huge frame queued behind a write in progress makes a huge batch.
	go p.CallRaw(context.Background(), "a/first", nil)
	<-w.started
	huge := json.RawMessage(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	done := make(chan error, 1)
	go func() { done <- p.Notify(context.Background(), "b/huge", huge) }()
	eventually(t, "the huge frame queues", func() bool {
		p.wmu.Lock()
		defer p.wmu.Unlock()
		return len(p.pend) > 1<<20
	})
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Then a write in progress with frames queued behind it again.
	w.started, w.release, w.first = make(chan struct{}), make(chan struct{}), sync.Once{}
	go p.CallRaw(context.Background(), "c/writer", nil)
	<-w.started
	for _, m := range []string{"d/queued", "e/queued", "f/queued"} {
		go p.CallRaw(context.Background(), m, nil)
	}
	eventually(t, "three requests queue", func() bool { return queuedIDs(p) == 3 })
	close(w.release)
	eventually(t, "every frame is written", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return bytes.Count(w.got.Bytes(), []byte("\n")) == 6
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSuffix(w.got.Bytes(), []byte("\n")), []byte("\n")) {
		m, err := ParseMessage(line)
		if err != nil {
			t.Fatalf("a written frame is garbled: %.200q: %v", line, err)
		}
		seen[m.Method] = true
	}
	for _, m := range []string{"a/first", "b/huge", "c/writer", "d/queued", "e/queued", "f/queued"} {
		if !seen[m] {
			t.Errorf("%s was not written intact (saw %v)", m, seen)
		}
	}
}

// frameCheck is a writer that checks each frame it is given holds only
// its peer's letter in the pad, the way a frame written over by another
// peer's message would not.
type frameCheck struct {
	letter byte
	mu     sync.Mutex
	frames int
	bad    string
}

func (w *frameCheck) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		w.frames++
		m, err := ParseMessage(line)
		pad := bytes.TrimSuffix(bytes.TrimPrefix(m.Params, []byte(`{"pad":"`)), []byte(`"}`))
		if err != nil || len(bytes.Trim(pad, string(w.letter))) != 0 {
			w.bad = fmt.Sprintf("frame %d: %.100q (%v)", w.frames, line, err)
		}
	}
	return len(b), nil
}

// Frames over the kept size are built in buffers pooled across peers: a
// stream of them reuses a few instead of allocating each, and a buffer
// goes back to the pool only once written, so peers sending big frames at
// the same time never write over each other's.
func TestBigFramesShareBuffersSafely(t *testing.T) {
	const size = 3 << 19 // 1.5 MiB, over keepMax
	var peers [3]*Peer
	var ws [3]*frameCheck
	var msgs [3]json.RawMessage
	for i := range peers {
		pr, pw := io.Pipe()
		ws[i] = &frameCheck{letter: byte('a' + i)}
		peers[i] = NewPeer(NewStreamConn(pr, ws[i], 0), PeerOptions{Timeout: time.Minute})
		peers[i].Start()
		t.Cleanup(func() { peers[i].Close(); pw.Close() })
		msgs[i] = json.RawMessage(`{"pad":"` + strings.Repeat(string(rune('a'+i)), size) + `"}`)
	}

	var wg sync.WaitGroup
	for i, p := range peers {
		for range 2 { // two senders per peer: frames queue behind writes too
			wg.Go(func() {
				for range 10 {
					if err := p.Notify(context.Background(), "big/frame", msgs[i]); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, w := range ws {
		if w.frames != 20 || w.bad != "" {
			t.Fatalf("peer %c: %d frames written, want 20; garbled: %s", w.letter, w.frames, w.bad)
		}
	}

	// One peer sending big frames one after another allocates a fraction
	// of each (the pool may lose buffers to a GC, and to the race
	// detector's random drops); building each frame anew costs at least
	// its size.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 20 {
		if err := peers[0].Notify(context.Background(), "big/frame", msgs[0]); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / 20; per > size/2 {
		t.Errorf("each big frame allocated %d bytes; want under %d, its buffer reused", per, size/2)
	}
}

// deadlineConn hands the Peer the frames on in and records, for each
// message written, whether its context had a deadline. unboundedConn is
// the same conn saying its writes honour none (WriteBounder).
type deadlineConn struct {
	in       chan []byte
	mu       sync.Mutex
	deadline []bool
}

func (c *deadlineConn) ReadMessage() ([]byte, error) {
	m, ok := <-c.in
	if !ok {
		return nil, io.EOF
	}
	return m, nil
}

func (c *deadlineConn) WriteMessage(ctx context.Context, _ []byte) error {
	_, ok := ctx.Deadline()
	c.mu.Lock()
	c.deadline = append(c.deadline, ok)
	c.mu.Unlock()
	return nil
}

func (c *deadlineConn) Close() error { return nil }

type unboundedConn struct{ *deadlineConn }

func (unboundedConn) WritesHonourDeadline() bool { return false }

type answerAll struct{}

func (answerAll) HandleRequest(context.Context, string, json.RawMessage) (any, error) {
	return json.RawMessage(`{}`), nil
}
func (answerAll) HandleNotification(context.Context, string, json.RawMessage) {}

// Responses are written under the request timeout over a conn whose writes
// honour a deadline, the default, and without one (no timer per response)
// over a conn that says its writes do not (WriteBounder).
func TestResponseWritesBoundedOnlyWhereHonoured(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func(*deadlineConn) Conn
		want bool
	}{
		{"default", func(c *deadlineConn) Conn { return c }, true},
		{"unbounded", func(c *deadlineConn) Conn { return unboundedConn{c} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dc := &deadlineConn{in: make(chan []byte, 1)}
			p := NewPeer(tc.mk(dc), PeerOptions{Handler: answerAll{}, Timeout: time.Minute})
			p.Start()
			defer p.Close()
			dc.in <- []byte(`{"jsonrpc":"2.0","id":1,"method":"x/y"}`)
			eventually(t, "the response is written", func() bool {
				dc.mu.Lock()
				defer dc.mu.Unlock()
				return len(dc.deadline) == 1
			})
			dc.mu.Lock()
			defer dc.mu.Unlock()
			if dc.deadline[0] != tc.want {
				t.Errorf("the response's write had a deadline: %v, want %v", dc.deadline[0], tc.want)
			}
		})
	}
}
