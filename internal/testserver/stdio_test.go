package testserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// stdioServer runs ServeStdio over io.Pipe pairs. It returns the client's
// side: toServer (the server's stdin), fromServer (its stdout) and the
// channel ServeStdio's result arrives on.
func stdioServer(t testing.TB, ctx context.Context, o Options) (toServer *io.PipeWriter, fromServer *io.PipeReader, done <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ch := make(chan error, 1)
	go func() {
		err := ServeStdio(ctx, o, inR, outW)
		outW.Close()
		ch <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		outR.Close()
	})
	return inW, outR, ch
}

func waitServe(t testing.TB, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return")
		return nil
	}
}

func TestServeStdio(t *testing.T) {
	ctx := testCtx(t)
	toServer, fromServer, done := stdioServer(t, ctx, Options{ToolCount: 3, PageSize: 4})
	logs := make(chan mcp.LogMessage, 4)
	c, err := mcp.Connect(ctx, mcp.NewStreamConn(fromServer, toServer, mcp.MaxFrameSize), mcp.ClientOptions{
		OnLog: func(m mcp.LogMessage) { logs <- m },
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.ServerInfo().Name != Name {
		t.Errorf("serverInfo %+v", c.ServerInfo())
	}
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) != len(builtinTools)+3 {
		t.Fatalf("%d tools, %v", len(tools), err)
	}
	r, err := c.CallTool(ctx, "echo", map[string]any{"message": "über\nstdio"}, nil)
	if err != nil || r.IsError || r.Content[0].Text != "über\nstdio" {
		t.Fatalf("echo = %+v, %v", r, err)
	}
	if m := <-logs; m.Logger != "echo" {
		t.Errorf("log %+v", m)
	}
	var progress int
	r, err = c.CallTool(ctx, "slow_operation", map[string]any{"duration": 0.05, "steps": 2}, &mcp.CallOptions{
		OnProgress: func(mcp.Progress) { progress++ },
	})
	if err != nil || r.IsError || progress != 2 {
		t.Errorf("slow_operation = %+v, %v, %d progress", r, err, progress)
	}
	// Larger than the initial 64 KiB read buffer, both ways.
	big := strings.Repeat("x", 200<<10)
	r, err = c.CallTool(ctx, "echo", map[string]any{"message": big}, nil)
	if err != nil || r.Content[0].Text != big {
		t.Fatalf("big echo: %v", err)
	}
	<-logs

	// EOF on stdin ends the session cleanly.
	toServer.Close()
	if err := waitServe(t, done); err != nil {
		t.Errorf("ServeStdio after EOF = %v, want nil", err)
	}
	c.Close()
}

func TestServeStdioRawFraming(t *testing.T) {
	ctx := testCtx(t)
	toServer, fromServer, done := stdioServer(t, ctx, Options{})
	lines := bufio.NewReader(fromServer)
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(toServer, s); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() map[string]json.RawMessage {
		t.Helper()
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "}\n") {
			t.Fatalf("frame %q is not one JSON line", line)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	// Blank lines and CRLF line endings are tolerated.
	send("\n  \r\n" + `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\r\n")
	m := recv()
	if string(m["id"]) != "1" || m["result"] == nil || !bytes.Contains(m["result"], []byte(`"nexus-testserver"`)) {
		t.Fatalf("initialize response %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}` + "\n")
	m = recv()
	if string(m["id"]) != `"a"` || !bytes.Contains(m["result"], []byte(`"sum":3`)) {
		t.Fatalf("add response %v", m)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	if m = recv(); string(m["id"]) != "2" || string(m["result"]) != "{}" {
		t.Fatalf("ping response %v", m)
	}
	toServer.Close()
	if err := waitServe(t, done); err != nil {
		t.Errorf("ServeStdio = %v", err)
	}
}

func TestServeStdioFrameTooLarge(t *testing.T) {
	ctx := testCtx(t)
	toServer, _, done := stdioServer(t, ctx, Options{})
	go func() {
		// The server stops reading at the limit; closing its stdin then
		// fails this write, which is fine.
		_, _ = toServer.Write(bytes.Repeat([]byte("{"), mcp.MaxFrameSize+10))
	}()
	err := waitServe(t, done)
	var own *ClientFrameTooLargeError
	var proto *mcp.FrameTooLargeError
	if !errors.As(err, &own) || !errors.As(err, &proto) || proto.Limit != mcp.MaxFrameSize {
		t.Fatalf("err = %v, want a frame-too-large error", err)
	}
	if !strings.Contains(err.Error(), "from the client") {
		t.Errorf("message %q", err)
	}
}

func TestServeStdioContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, _, done := stdioServer(t, ctx, Options{})
	cancel()
	if err := waitServe(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestServeStdioMalformed(t *testing.T) {
	ctx := testCtx(t)
	toServer, _, done := stdioServer(t, ctx, Options{})
	go io.WriteString(toServer, "{not json}\n")
	var inv *mcp.InvalidMessageError
	if err := waitServe(t, done); !errors.As(err, &inv) {
		t.Errorf("err = %v, want an invalid message error", err)
	}
}

// BenchmarkEchoStdio is a tools/call round trip through ServeStdio over
// in-memory pipes: the cost of the test server as a benchmark peer.
func BenchmarkEchoStdio(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	toServer, fromServer, done := stdioServer(b, ctx, Options{})
	c, err := mcp.Connect(ctx, mcp.NewStreamConn(fromServer, toServer, mcp.MaxFrameSize), mcp.ClientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"message":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	toServer.Close()
	<-done
	c.Close()
}
