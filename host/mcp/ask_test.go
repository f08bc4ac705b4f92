package mcp

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// questioner serves "work" by asking the other side "question" first (as a
// tool handler asks for elicitation or sampling) and returning its
// answer; it answers "question" itself with "42".
type questioner struct{ p **Peer }

func (a questioner) HandleRequest(ctx context.Context, method string, _ json.RawMessage) (any, error) {
	if method == "question" {
		return json.RawMessage(`"42"`), nil
	}
	return (*a.p).CallRaw(ctx, "question", nil)
}

func (questioner) HandleNotification(context.Context, string, json.RawMessage) {}

// askPair is two Peers over a Pipe (no DirectReader: each reply is read
// by whoever holds the reading role), each serving questioner.
func askPair(t testing.TB, hold bool) (srv, cli *Peer) {
	t.Helper()
	// The handlers find their Peer through these: set before any request.
	var s, c *Peer
	s, c = peerPair(t, PeerOptions{Handler: questioner{&s}}, PeerOptions{Handler: questioner{&c}})
	if hold {
		// No timer hands a free role to a background reader within the
		// test (none is armed before the first request): what reads the
		// handler's reply must come from the call.
		s.serveWait.Store(int64(time.Hour))
		s.idleWait.Store(int64(time.Hour))
	}
	return s, c
}

// A handler served on the goroutine that read its request, asking the
// other side mid-request, gets its answer without waiting for the idle
// timer: its call hands the free reading role to a background reader.
// Before, the reply sat unread until the timer fired (about 1 ms a
// question; here never, the timers being an hour).
func TestHandlerAskReadsItsReply(t *testing.T) {
	_, cli := askPair(t, true)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		raw, err := cli.CallRaw(ctx, "work", nil)
		cancel()
		if err != nil || string(raw) != `"42"` {
			t.Fatalf("call %d: %s, %v (the handler's question was answered but its reply not read)", i, raw, err)
		}
	}
}

// BenchmarkAskRoundTrip: a request whose handler asks the other side
// once (the shape of a tool that elicits or samples) against a plain
// request, over the same Pipe; ask-x is the ratio, ideally about 2 (two
// exchanges against one).
func BenchmarkAskRoundTrip(b *testing.B) {
	_, cli := askPair(b, false)
	ctx := context.Background()
	var plain, asked time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := cli.CallRaw(ctx, "question", nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := cli.CallRaw(ctx, "work", nil); err != nil {
			b.Fatal(err)
		}
		asked += time.Since(t1)
		plain += t1.Sub(t0)
	}
	b.ReportMetric(float64(plain.Nanoseconds())/1e3/float64(b.N), "plain-us")
	b.ReportMetric(float64(asked.Nanoseconds())/1e3/float64(b.N), "ask-us")
	b.ReportMetric(float64(asked)/float64(max(plain, 1)), "ask-x")
}
