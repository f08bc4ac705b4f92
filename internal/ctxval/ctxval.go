package ctxval

import "context"

// With returns parent carrying val under key, like context.WithValue, but
// keeping parent's way of running functions when it is done: a context
// derived from the result (a call's deadline, say) then registers with
// parent rather than start a goroutine to watch it. context.WithValue
// hides a custom parent's AfterFunc method (an MCP request's context has
// one), and on a busy machine that goroutine per derived context costs
// tens of microseconds a call.
func With(parent context.Context, key, val any) context.Context {
	return &valueCtx{parent, key, val}
}

type valueCtx struct {
	context.Context
	key, val any
}

func (c *valueCtx) Value(key any) any {
	if key == c.key {
		return c.val
	}
	return c.Context.Value(key)
}

// AfterFunc is what context.AfterFunc, and so every context derived from
// c, uses instead of a goroutine of its own. It hands f straight to the
// parent's own AfterFunc where there is one: context.AfterFunc would wrap
// it in a context of its own at every value on the way, several
// allocations and locks per level on every call.
func (c *valueCtx) AfterFunc(f func()) (stop func() bool) {
	if a, ok := c.Context.(interface{ AfterFunc(func()) func() bool }); ok {
		return a.AfterFunc(f)
	}
	return context.AfterFunc(c.Context, f)
}
