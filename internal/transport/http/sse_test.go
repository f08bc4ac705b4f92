package httptransport

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

func readAll(t *testing.T, r *SSEReader) ([]Event, error) {
	t.Helper()
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestSSEParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Event
	}{
		{"lf", "data: a\n\n", []Event{{Data: []byte("a")}}},
		{"crlf", "data: a\r\n\r\n", []Event{{Data: []byte("a")}}},
		{"cr", "data: a\r\rdata: b\r\r", []Event{{Data: []byte("a")}, {Data: []byte("b")}}},
		{"multi-line data", "data: a\ndata:b\ndata\n\n", []Event{{Data: []byte("a\nb\n")}}},
		{"comments and keep-alives", ": ping\n\n:\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"event id retry", "event: message\nid: 7\nretry: 1500\ndata: {}\n\n",
			[]Event{{Type: "message", ID: "7", HasID: true, Retry: 1500 * time.Millisecond, Data: []byte("{}")}}},
		{"priming event (id, empty data)", "id: p1-0\ndata:\n\n", []Event{{ID: "p1-0", HasID: true, Data: []byte{}}}},
		{"only two spaces: one kept", "data:  x\n\n", []Event{{Data: []byte(" x")}}},
		{"bad retry ignored", "retry: 12a\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"id with NUL ignored", "id: a\x00b\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"unknown field ignored", "foo: bar\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"incomplete last event dropped", "data: a\n\ndata: b\n", []Event{{Data: []byte("a")}}},
		{"bom", "\xEF\xBB\xBFdata: a\n\n", []Event{{Data: []byte("a")}}},
		{"blank lines only", "\n\n\r\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, reader := range []func(io.Reader) io.Reader{
				func(r io.Reader) io.Reader { return r },
				iotest.OneByteReader, // every split point, CR/LF across reads included
			} {
				got, err := readAll(t, NewSSEReader(reader(strings.NewReader(tc.in)), 1<<10))
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("err = %v", err)
				}
				if len(got) != len(tc.want) {
					t.Fatalf("got %d events %+v, want %+v", len(got), got, tc.want)
				}
				for i := range got {
					g, w := got[i], tc.want[i]
					if g.Type != w.Type || g.ID != w.ID || g.HasID != w.HasID || g.Retry != w.Retry || !bytes.Equal(g.Data, w.Data) {
						t.Errorf("event %d = %+v, want %+v", i, g, w)
					}
				}
			}
		})
	}
}

func TestSSELimits(t *testing.T) {
	// An endless line fails once past the limit, without reading on.
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: "), endless('a')), 1<<10)
	_, err := r.Next()
	var tl *mcp.FrameTooLargeError
	if !errors.As(err, &tl) || tl.Limit != 1<<10 {
		t.Fatalf("endless line: %v", err)
	}
	// Many data lines add up.
	r = NewSSEReader(strings.NewReader(strings.Repeat("data: 0123456789\n", 200)+"\n"), 1<<10)
	if _, err := r.Next(); !errors.As(err, &tl) {
		t.Fatalf("accumulated data: %v", err)
	}
	// Exactly at the limit is fine.
	r = NewSSEReader(strings.NewReader("data: "+strings.Repeat("x", 1<<10)+"\n\n"), 1<<10)
	if ev, err := r.Next(); err != nil || len(ev.Data) != 1<<10 {
		t.Fatalf("at the limit: %d bytes, %v", len(ev.Data), err)
	}
}

// endless is a reader that never ends.
type endless byte

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(e)
	}
	return len(p), nil
}

// FuzzSSE checks that the parser never panics, never returns data over the
// limit, and treats every line ending alike.
func FuzzSSE(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n",
		"event: endpoint\ndata: /messages?sessionId=1\n\n",
		"id: p1-0\ndata:\n\nid: p1-1\nretry: 10\ndata: {\"jsonrpc\":\"2.0\"}\n\n",
		": comment\r\ndata: a\r\ndata: b\r\n\r\n",
		"data: a\rdata: b\r\r",
		"\xEF\xBB\xBFid\nretry\ndata\nevent\n\n",
		"data: " + strings.Repeat("x", 300) + "\n\n",
		"retry: 99999999999999999999\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		const limit = 256
		evs, err := readAllFuzz(NewSSEReader(bytes.NewReader(in), limit))
		var tl *mcp.FrameTooLargeError
		if err != io.EOF && err != io.ErrUnexpectedEOF && !errors.As(err, &tl) {
			t.Fatalf("unexpected error %v", err)
		}
		for _, ev := range evs {
			if len(ev.Data) > limit {
				t.Fatalf("event data %d bytes over the %d limit", len(ev.Data), limit)
			}
			if ev.Retry < 0 || ev.Retry > maxRetryField {
				t.Fatalf("retry %v out of range", ev.Retry)
			}
		}
		if errors.As(err, &tl) {
			return
		}
		// CRLF and CR line endings parse like LF.
		lf := bytes.ReplaceAll(bytes.ReplaceAll(in, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		evs2, err2 := readAllFuzz(NewSSEReader(bytes.NewReader(lf), limit))
		if errors.As(err2, &tl) {
			return
		}
		if len(evs) != len(evs2) {
			t.Fatalf("%d events with mixed line endings, %d with LF", len(evs), len(evs2))
		}
		for i := range evs {
			if !bytes.Equal(evs[i].Data, evs2[i].Data) || evs[i].ID != evs2[i].ID || evs[i].Type != evs2[i].Type {
				t.Fatalf("event %d differs: %+v vs %+v", i, evs[i], evs2[i])
			}
		}
	})
}

func readAllFuzz(r *SSEReader) ([]Event, error) {
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// A released reader's buffer serves the next stream with nothing of the
// last one: not what it had buffered and not read, not its state.
func TestSSEReleaseReuse(t *testing.T) {
	for range 50 {
		r := NewSSEReader(strings.NewReader("data: first\n\ndata: never read\r"), 0)
		if ev, err := r.Next(); err != nil || string(ev.Data) != "first" {
			t.Fatalf("%q %v", ev.Data, err)
		}
		r.Release()
		r.Release() // twice is harmless
		r2 := NewSSEReader(strings.NewReader("\ndata: second\n\n"), 0)
		if ev, err := r2.Next(); err != nil || string(ev.Data) != "second" {
			t.Fatalf("the next stream read %q %v", ev.Data, err)
		}
		if _, err := r2.Next(); err != io.EOF {
			t.Fatalf("after its end: %v", err)
		}
		r2.Release()
	}
}

// Gap 9 of issue 37 (memory per large call): a data line of megabytes was
// gathered by append, which grows a large slice a quarter at a time, then
// copied into the event: about six times the line allocated. Now the line
// is gathered in pooled chunks, joined once, and the event takes it over.
func TestSSELongLineAllocations(t *testing.T) {
	const size = 8 << 20
	data := strings.Repeat("y", size)
	// Two events: the second line is gathered with the pool warm, as on
	// a stream that carries more than one.
	in := "data: " + data + "\n\ndata: " + data + "\n\n"
	r := NewSSEReader(strings.NewReader(in), 2*size)
	if ev, err := r.Next(); err != nil || len(ev.Data) != size {
		t.Fatalf("first event: %d bytes, %v", len(ev.Data), err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ev, err := r.Next()
	runtime.ReadMemStats(&after)
	if err != nil || len(ev.Data) != size || string(ev.Data) != data {
		t.Fatalf("second event: %d bytes, %v", len(ev.Data), err)
	}
	// The line itself, and room for what the pool lost to a collection.
	if n := after.TotalAlloc - before.TotalAlloc; n > size*3/2 {
		t.Errorf("reading an %d-byte line allocated %d bytes (%.1fx)", size, n, float64(n)/size)
	}
}
