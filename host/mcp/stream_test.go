package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

func TestStreamConnLimit(t *testing.T) {
	const limit = 16
	frame := strings.Repeat("a", limit)
	for _, tc := range []struct {
		in   string
		want []string
		err  bool // a frame-too-large error after want
	}{
		{frame + "\n", []string{frame}, false},
		{frame + "\r\n", []string{frame}, false},
		{frame, []string{frame}, false},
		{" " + frame + "\n", []string{frame}, false}, // within the slack for "\r\n"
		{"   " + frame + "\n", nil, true},
		{frame + "a\n", nil, true},
		{"x\n" + frame + "aaaaaaaaaaaaaaaaaaaaa\n", []string{"x"}, true},
		{"\n\n \t\r\nx\n\ny", []string{"x", "y"}, false},
	} {
		c := NewStreamConn(strings.NewReader(tc.in), io.Discard, limit)
		var got []string
		var err error
		for {
			var b []byte
			b, err = c.ReadMessage()
			if err != nil {
				break
			}
			got = append(got, string(b))
		}
		var tooLarge *FrameTooLargeError
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || errors.As(err, &tooLarge) != tc.err || (!tc.err && err != io.EOF) {
			t.Errorf("%q: frames %q, err %v", tc.in, got, err)
		}
	}
}

func TestStreamConnWrites(t *testing.T) {
	var out lockedBuffer
	c := NewStreamConn(strings.NewReader(""), &out, MaxFrameSize)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			msg := []byte(`{"n":` + strings.Repeat("1", i+1) + `}`)
			for range 100 {
				if err := c.WriteMessage(context.Background(), msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("torn write %q", l)
		}
	}
	if out.writes != 800 {
		t.Errorf("%d Write calls for 800 messages", out.writes)
	}
	// A huge message does not pin its buffer.
	if err := c.WriteMessage(context.Background(), bytes.Repeat([]byte("x"), 2<<20)); err != nil || c.wbuf != nil {
		t.Errorf("huge write: %v, kept %d bytes", err, cap(c.wbuf))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WriteMessage(ctx, []byte("{}")); !errors.Is(err, context.Canceled) {
		t.Errorf("write with cancelled ctx: %v", err)
	}
	c.Close()
	c.Close()
	if err := c.WriteMessage(context.Background(), []byte("{}")); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
}

func TestStreamConnCloseUnblocksRead(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c := NewStreamConn(r, io.Discard, MaxFrameSize)
	errc := make(chan error, 1)
	go func() {
		_, err := c.ReadMessage()
		errc <- err
	}()
	// Close while the read waits in the pipe, not before it starts (a read
	// after Close fails without waiting).
	if !testenv.WaitBlocked(t, errc, "select", "(*StreamConn).ReadMessage(", "io.(*pipe).read(") {
		t.Fatalf("ReadMessage returned before Close: %v", <-errc)
	}
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("read after close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock ReadMessage")
	}
}

type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// FuzzStreamConn: whatever arrives, frames are bounded, trimmed and contain
// no newline, and reading ends with EOF or a frame-too-large error.
func FuzzStreamConn(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	f.Add([]byte("\r\n\n  {}\r\n[]"))
	f.Add([]byte(strings.Repeat("a", 40) + "\n{}\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 32
		c := NewStreamConn(bytes.NewReader(in), io.Discard, limit)
		total := 0
		for {
			b, err := c.ReadMessage()
			if err != nil {
				var tooLarge *FrameTooLargeError
				if err != io.EOF && !errors.As(err, &tooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(b) == 0 || len(b) > limit || bytes.IndexByte(b, '\n') >= 0 || isSpace(b[0]) || isSpace(b[len(b)-1]) {
				t.Fatalf("bad frame %q", b)
			}
			total += len(b)
			if total > len(in) {
				t.Fatalf("read %d bytes of frames from %d bytes of input", total, len(in))
			}
		}
	})
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

// A line longer than the read buffer is the caller's (FrameOwned), and the
// frames after it do not write over it; one read from the buffer is not.
func TestStreamConnOwnsLongFrames(t *testing.T) {
	long1 := `{"x":"` + strings.Repeat("a", 70<<10) + `"}`
	long2 := `{"y":"` + strings.Repeat("b", 70<<10) + `"}`
	c := NewStreamConn(strings.NewReader("{}\n"+long1+"\n"+long2+"\r\n{}\n"+long1), io.Discard, 0)
	var got []string
	var frames [][]byte
	for {
		f, err := c.ReadMessage()
		if err != nil {
			break
		}
		got = append(got, fmt.Sprint(c.FrameOwned()))
		frames = append(frames, f)
	}
	if want := "false true true false true"; strings.Join(got, " ") != want {
		t.Fatalf("owned = %v, want %s", got, want)
	}
	if string(frames[1]) != long1 || string(frames[2]) != long2 || string(frames[4]) != long1 {
		t.Fatal("long frames changed after later reads")
	}
}

// ownedConn answers each request with a frame of its own and says whether
// the Peer may keep it.
type ownedConn struct {
	owned  bool
	frames chan []byte
	last   []byte // the last frame handed out
	closed chan struct{}
	once   sync.Once
}

func (c *ownedConn) ReadMessage() ([]byte, error) {
	select {
	case f := <-c.frames:
		c.last = f
		return f, nil
	case <-c.closed:
		return nil, ErrClosed
	}
}

func (c *ownedConn) WriteMessage(_ context.Context, msg []byte) error {
	m, err := ParseMessage(msg)
	if err != nil || m.ID == nil {
		return err
	}
	c.frames <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	return nil
}

func (c *ownedConn) FrameOwned() bool { return c.owned }
func (c *ownedConn) Close() error     { c.once.Do(func() { close(c.closed) }); return nil }

// A response in a frame the conn hands over is kept as it is, not copied
// (a 1 MB result is not copied once more); one in the conn's own buffer
// is copied, so the conn may reuse the buffer.
func TestPeerKeepsOwnedFrames(t *testing.T) {
	for _, owned := range []bool{true, false} {
		c := &ownedConn{owned: owned, frames: make(chan []byte, 1), closed: make(chan struct{})}
		p := NewPeer(c, PeerOptions{Timeout: time.Minute})
		p.Start()
		raw, err := p.CallRaw(context.Background(), "x/y", nil)
		if err != nil {
			t.Fatal(err)
		}
		before := string(raw)
		for i := range c.last {
			c.last[i] = ' '
		}
		if shared := string(raw) != before; shared != owned {
			t.Errorf("owned frame %v: result shares the frame's memory: %v", owned, shared)
		}
		p.Close()
	}
}
