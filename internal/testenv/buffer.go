package testenv

import (
	"bytes"
	"sync"
)

// Buffer collects what several goroutines write (a logger's output, a
// server's stderr) for a test to read: an io.Writer safe for concurrent
// use. The zero value is ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
