package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

func testSealer(t testing.TB) *sealer {
	sl, err := newSealer(make([]byte, 32), [8]byte{7})
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

// A sealed state opens to what was sealed; any changed character fails
// its integrity check; the binding ignores the arguments' spacing.
func TestStateSealOpen(t *testing.T) {
	sl := testSealer(t)
	b := bindingOf("tools/call", "ask", json.RawMessage(`{"a": [1, "x y"]}`))
	if b != bindingOf("tools/call", "ask", json.RawMessage(`{"a":[1,"x y"]}`)) || b == bindingOf("tools/call", "ask", json.RawMessage(`{"a":[1,"xy"]}`)) {
		t.Error("the binding depends on spacing, or not on the arguments")
	}
	st := &state{call: [16]byte{1, 2}, round: 3, replica: sl.replica, expires: time.Now().Add(time.Minute).Unix(), agent: "claude", bind: b}
	s := sl.seal(st)
	got, err := sl.open(s)
	if err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("opened %+v, %v; sealed %+v", got, err, st)
	}
	if err := got.check("claude", b, time.Now()); err != nil {
		t.Error(err)
	}
	// A modern upstream's, with what its retry needs to be the same call.
	up := &state{upstream: true, call: [16]byte{9}, replica: sl.replica, expires: st.expires, agent: "claude", bind: b, inner: "theirs",
		params: `{"name":"ask","arguments":{"a":2}}`, asks: []asked{{key: "who", method: "elicitation/create", params: json.RawMessage(`{"message":"who?"}`)}, {key: "r", method: "roots/list", params: json.RawMessage{}}}}
	if got, err := sl.open(sl.seal(up)); err != nil || !reflect.DeepEqual(got, up) {
		t.Fatalf("opened %+v, %v; sealed %+v", got, err, up)
	}
	for i := len(statePrefix); i < len(s); i++ {
		c := []byte(s)
		c[i] ^= 1
		if _, err := sl.open(string(c)); err == nil || !strings.Contains(err.Error(), "requestState") {
			t.Fatalf("a state changed at %d opened: %v", i, err)
		}
	}
	other, _ := newSealer(append(make([]byte, 31), 1), sl.replica)
	if _, err := other.open(s); err == nil || !strings.Contains(err.Error(), "state_key") {
		t.Errorf("another key's state: %v", err)
	}
}

// BenchmarkState is sealing and opening one requestState, against the
// issue's budget of 5 µs of CPU (budget-ratio ≤ 1). The baseline, SHA-256
// of the same bytes, runs interleaved with it in chunks of the same loop
// (x-sha256). Both are the goroutine's thread's CPU time: the box is
// shared, and wall time would count other processes' turns.
func BenchmarkState(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sl := testSealer(b)
	bind := bindingOf("tools/call", "mcp_github_create_issue", json.RawMessage(`{"title":"a bug","body":"it fails"}`))
	st := &state{call: [16]byte{1}, round: 1, replica: sl.replica, expires: time.Now().Add(time.Minute).Unix(), agent: "claude", bind: bind}
	p := []byte(sl.seal(st))
	const chunk = 200
	var base, seal time.Duration
	b.ReportAllocs()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		t0 := threadCPU()
		for range n {
			sha256.Sum256(p)
		}
		t1 := threadCPU()
		for range n {
			if _, err := sl.open(sl.seal(st)); err != nil {
				b.Fatal(err)
			}
		}
		seal += threadCPU() - t1
		base += t1 - t0
	}
	per := float64(seal.Nanoseconds()) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/seal+open")
	b.ReportMetric(per/5000, "budget-ratio")
	b.ReportMetric(float64(seal)/float64(max(base, 1)), "x-sha256")
}
