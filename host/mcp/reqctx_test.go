package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestReqCtx(t *testing.T) {
	type k struct{}
	base := context.WithValue(context.Background(), k{}, "v")
	c := &reqCtx{Context: context.WithoutCancel(base)}
	if c.Value(k{}) != "v" || c.Err() != nil {
		t.Fatal("values or state wrong")
	}
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	fired := make(chan struct{})
	stop := context.AfterFunc(c, func() { close(fired) })
	stopped := context.AfterFunc(c, func() { t.Error("stopped func ran") })
	if !stopped() {
		t.Error("stop reported the func as already run")
	}
	done := c.Done()
	c.cancel()
	c.cancel() // twice is fine
	for _, ch := range []<-chan struct{}{done, c.Done(), child.Done(), fired} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("not cancelled")
		}
	}
	if stop() {
		t.Error("stop after cancel reported success")
	}
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(context.Cause(c), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Errorf("err %v cause %v child %v", c.Err(), context.Cause(c), child.Err())
	}
	late := make(chan struct{})
	context.AfterFunc(c, func() { close(late) })
	select {
	case <-late:
	case <-time.After(5 * time.Second):
		t.Fatal("AfterFunc after cancel never ran")
	}
}

func TestKeyOf(t *testing.T) {
	same := [][2]string{{"1", " 1 "}, {`"a"`, `"\u0061"`}, {"-7", "-7"}, {"12345678901234567890", "12345678901234567890"}}
	for _, p := range same {
		if keyOf(json.RawMessage(p[0])) != keyOf(json.RawMessage(p[1])) {
			t.Errorf("%s and %s differ", p[0], p[1])
		}
	}
	differ := [][2]string{{"1", `"1"`}, {"1", "2"}, {"01", "1"}, {"1.0", "1"}, {`"a"`, `"b"`}, {"-1", "1"}}
	for _, p := range differ {
		if keyOf(json.RawMessage(p[0])) == keyOf(json.RawMessage(p[1])) {
			t.Errorf("%s and %s collide", p[0], p[1])
		}
	}
}

// Functions registered on a request's context run unless stopped, in any
// mix (stop takes one out of the middle); the request's id is found
// through the values the host wraps it in, and neither that lookup nor a
// registration with onDone costs a wrapper context.
func TestReqCtxAfterFuncs(t *testing.T) {
	c := &reqCtx{Context: context.Background(), id: json.RawMessage(`7`)}
	ran := make(chan int, 4)
	var stops []func() bool
	for i := range 4 {
		stops = append(stops, onDone(c, func() { ran <- i }))
	}
	if !stops[1]() || !stops[3]() || stops[1]() {
		t.Fatal("stop did not report what was registered")
	}
	c.cancel()
	got := map[int]bool{}
	for range 2 {
		select {
		case i := <-ran:
			got[i] = true
		case <-time.After(5 * time.Second):
			t.Fatal("a registered func did not run")
		}
	}
	if !got[0] || !got[2] {
		t.Errorf("ran %v, want 0 and 2", got)
	}
	if stops[0]() {
		t.Error("stop after the func ran reported success")
	}

	type k struct{}
	wrapped := context.WithValue(c, k{}, 1)
	if id := RelatedRequest(wrapped); string(id) != "7" {
		t.Errorf("RelatedRequest = %s", id)
	}
	if id := RelatedRequest(WithRelatedRequest(wrapped, json.RawMessage(`8`))); string(id) != "8" {
		t.Errorf("RelatedRequest after WithRelatedRequest = %s", id)
	}
	if n := testing.AllocsPerRun(100, func() { RelatedRequest(wrapped) }); n != 0 {
		t.Errorf("RelatedRequest allocates %v times", n)
	}
	live := &reqCtx{Context: context.Background()}
	if n := testing.AllocsPerRun(100, func() { onDone(live, func() {})() }); n > 1 {
		t.Errorf("onDone and stop allocate %v times, want at most 1 (the stop)", n)
	}
	if onDone(context.Background(), func() {}) != nil {
		t.Error("a context that is never done got a registration")
	}
}
