package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
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

// BenchmarkServeCPU is the server role's own work per tools/call over a
// stream: b.N requests arrive at once (an in-memory reader), the answers
// go to a writer that counts them. No I/O waits, no other side.
func BenchmarkServeCPU(b *testing.B) {
	s := NewServer(Implementation{Name: "bench", Version: "1"}, ServerOptions{})
	s.AddTool(Tool{Name: "echo", InputSchema: []byte(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent("hello")}}, nil
	})
	var in bytes.Buffer
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := range b.N {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}`+"\n", i+1)
	}
	out := &lineCounter{}
	b.ReportAllocs()
	b.ResetTimer()
	if err := s.Serve(context.Background(), NewStreamConn(&in, out, 0)); err != nil && !errors.Is(err, io.EOF) {
		b.Fatal(err)
	}
	b.StopTimer()
	if got := out.lines.Load(); got != int64(b.N)+1 {
		b.Fatalf("%d answers, want %d", got, b.N+1)
	}
}

type lineCounter struct{ lines atomic.Int64 }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.lines.Add(int64(bytes.Count(p, []byte{'\n'})))
	return len(p), nil
}
