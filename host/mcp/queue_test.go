package mcp

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.wmu.Lock()
		n := len(p.pendIDs)
		p.wmu.Unlock()
		if n == queued {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", n, queued)
		}
		time.Sleep(time.Millisecond)
	}
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

// echoWriter answers every request in the frames it is given, through
// ReadMessage, and counts its writes.
type echoWriter struct {
	replies chan []byte
	writes  atomic.Int64
	frames  atomic.Int64
}

func (w *echoWriter) ReadMessage() ([]byte, error) {
	r, ok := <-w.replies
	if !ok {
		return nil, ErrClosed
	}
	return r, nil
}

func (w *echoWriter) WriteMessage(ctx context.Context, msg []byte) error {
	return w.WriteFrames(ctx, append(msg, '\n'))
}

func (w *echoWriter) WriteFrames(_ context.Context, frames []byte) error {
	w.writes.Add(1)
	for _, f := range bytes.Split(bytes.TrimSuffix(frames, []byte("\n")), []byte("\n")) {
		w.frames.Add(1)
		m, err := ParseMessage(f)
		if err != nil || m.ID == nil {
			continue
		}
		w.replies <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
	}
	return nil
}

func (w *echoWriter) Close() error { return nil }

// Many callers at once share writes: a request's writer lets the callers
// that its replies woke queue behind it (group commit), so the other side
// sees a fraction of a write per request, not one each.
func TestConcurrentCallersShareWrites(t *testing.T) {
	w := &echoWriter{replies: make(chan []byte, 1024)}
	p := NewPeer(w, PeerOptions{})
	p.Start()
	defer p.Close()
	const callers, each = 32, 100
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := p.CallRaw(context.Background(), "x/y", nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	frames, writes := w.frames.Load(), w.writes.Load()
	t.Logf("%d requests in %d writes", frames, writes)
	if frames != callers*each || writes*2 > frames {
		t.Fatalf("%d requests in %d writes: want at least 2 requests per write", frames, writes)
	}
}
