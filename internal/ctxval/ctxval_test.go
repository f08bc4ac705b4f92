package ctxval

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// custom is a context with its own AfterFunc, as an MCP request's is.
type custom struct {
	context.Context
	done  chan struct{}
	funcs []func()
}

func (c *custom) Done() <-chan struct{} { return c.done }
func (c *custom) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}
func (c *custom) AfterFunc(f func()) func() bool {
	c.funcs = append(c.funcs, f)
	return func() bool { return true }
}
func (c *custom) cancel() {
	close(c.done)
	for _, f := range c.funcs {
		f()
	}
}

// A value is found, and a deadline derived from the wrapped custom context
// registers with it (no watcher goroutine) and is cancelled with it.
func TestWith(t *testing.T) {
	type k struct{}
	parent := &custom{Context: context.Background(), done: make(chan struct{})}
	ctx := With(parent, k{}, "v")
	if ctx.Value(k{}) != "v" || ctx.Value("other") != nil {
		t.Fatal("values")
	}
	before := runtime.NumGoroutine()
	var cancels []context.CancelFunc
	for range 50 {
		d, cancel := context.WithTimeout(ctx, time.Hour)
		cancels = append(cancels, cancel)
		_ = d
	}
	if n := runtime.NumGoroutine(); n > before+5 {
		t.Errorf("%d goroutines for 50 derived contexts (context.WithValue would start one each)", n-before)
	}
	if len(parent.funcs) != 50 {
		t.Errorf("%d functions registered with the parent, want 50", len(parent.funcs))
	}
	d, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	parent.cancel()
	select {
	case <-d.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a derived context outlived its parent")
	}
	for _, c := range cancels {
		c()
	}
}
