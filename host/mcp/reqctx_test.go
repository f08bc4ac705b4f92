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
