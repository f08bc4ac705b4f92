package mcp

import (
	"context"
	"io"
	"sync"
)

// Pipe returns two connected in-memory Conns, for tests and for serving an
// in-process server without a transport.
func Pipe() (Conn, Conn) {
	ab := make(chan []byte, 64)
	ba := make(chan []byte, 64)
	done := make(chan struct{})
	once := &sync.Once{}
	a := &pipeConn{in: ba, out: ab, done: done, once: once}
	b := &pipeConn{in: ab, out: ba, done: done, once: once}
	return a, b
}

type pipeConn struct {
	in   <-chan []byte
	out  chan<- []byte
	done chan struct{}
	once *sync.Once
}

func (p *pipeConn) ReadMessage() ([]byte, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.done:
		return nil, io.EOF
	}
}

func (p *pipeConn) WriteMessage(ctx context.Context, msg []byte) error {
	m := append([]byte(nil), msg...)
	select {
	case p.out <- m:
		return nil
	case <-p.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeConn) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}
