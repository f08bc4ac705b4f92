package mcp

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"
)

// instantConn answers every request the moment it is written, in memory:
// a client round trip over it is the client's own CPU, with no I/O and no
// other side to wait for.
type instantConn struct {
	replies chan []byte
	last    []byte
}

func newInstantConn() *instantConn { return &instantConn{replies: make(chan []byte, 16)} }

func (c *instantConn) ReadMessage() ([]byte, error) {
	r, ok := <-c.replies
	if !ok {
		return nil, ErrClosed
	}
	return r, nil
}

func (c *instantConn) WriteMessage(_ context.Context, msg []byte) error {
	i := bytes.Index(msg, []byte(`"id":`))
	if i < 0 {
		return nil // a notification
	}
	j := i + 5
	for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
		j++
	}
	id, _ := strconv.Atoi(string(msg[i+5 : j]))
	out := append(c.last[:0], `{"jsonrpc":"2.0","id":`...)
	out = strconv.AppendInt(out, int64(id), 10)
	if bytes.Contains(msg, []byte(`"method":"initialize"`)) {
		out = append(out, `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"instant","version":"1"}}}`...)
	} else {
		out = append(out, `,"result":{"content":[{"type":"text","text":"hello"}]}}`...)
	}
	c.last = out
	c.replies <- out
	return nil
}

func (c *instantConn) Close() error { return nil }

func (c *instantConn) DirectReads() bool { return true }

func (c *instantConn) ReadMessageBefore(deadline time.Time) ([]byte, error) {
	select {
	case r := <-c.replies:
		return r, nil
	default:
		return nil, ErrReadTimeout
	}
}

func (c *instantConn) InterruptRead() {}

// BenchmarkCallToolCPU is the client's own work per tools/call: encoding,
// bookkeeping, reading its reply directly and decoding it.
func BenchmarkCallToolCPU(b *testing.B) {
	ctx := context.Background()
	c, err := Connect(ctx, newInstantConn(), ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	args := map[string]any{"message": "hello"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.CallTool(ctx, "echo", args, nil)
		if err != nil || res.Content[0].Text != "hello" {
			b.Fatal(res, err)
		}
	}
}
