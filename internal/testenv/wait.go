package testenv

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitBlocked waits until some goroutine is parked in state (as
// runtime.Stack names it: "select", "IO wait", "syscall", …) with each of
// fns in its stack, and reports true; or until done holds a value, and
// reports false: the call it watches returned before it blocked. It fails
// the test after 10 s. It is how a test makes sure it acts on a call that
// is waiting, rather than sleeping and hoping.
func WaitBlocked[T any](t testing.TB, done <-chan T, state string, fns ...string) bool {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if len(done) > 0 {
			return false
		}
		if BlockedIn(state, fns...) {
			return true
		}
	}
	t.Fatalf("after 10 s, no goroutine is parked (%s) in %s", state, strings.Join(fns, " and "))
	return false
}

// BlockedIn reports whether some goroutine is parked in state with each of
// fns in its stack.
func BlockedIn(state string, fns ...string) bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(head, " ["+state) {
			continue
		}
		all := true
		for _, fn := range fns {
			all = all && strings.Contains(g, fn)
		}
		if all {
			return true
		}
	}
	return false
}
