package stdio

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// ring keeps the last n lines. It is shared between the goroutine producing
// lines and whoever builds an error or asks for a snapshot.
type ring struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, max(n, 1))} }

func (r *ring) add(s string) {
	r.mu.Lock()
	r.lines[r.next] = s
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// snapshot returns the kept lines, oldest first, as a fresh slice.
func (r *ring) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// keepLine converts a line for storage: at most maxKeptLine bytes, cut on a
// rune boundary, valid UTF-8, so it can be logged and rendered safely.
func keepLine(b []byte) string {
	if len(b) > maxKeptLine {
		n := maxKeptLine
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
