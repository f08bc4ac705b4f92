package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary serves MCP on its own stdin and stdout when
// NEXUS_MCP_STDIO_SERVER is set (before any test runs).
func init() {
	if os.Getenv("NEXUS_MCP_STDIO_SERVER") == "" {
		return
	}
	s := NewServer(Implementation{Name: "stdio-test", Version: "1"}, ServerOptions{})
	s.AddTool(Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *CallToolRequest) (*CallToolResult, error) {
		return &CallToolResult{Content: []Content{TextContent(string(r.Arguments))}}, nil
	})
	StdioConn() // a second StdioConn must work as well as the first
	err := s.Serve(context.Background(), StdioConn())
	if err != nil && err.Error() != "EOF" {
		os.Exit(1)
	}
	os.Exit(0)
}

// StdioConn serves a client on a pipe whatever the pauses between its
// messages (a read that finds stdin empty waits, first on its own thread,
// then in the poller), and ends cleanly at the end of its input, also when
// stdin is /dev/null.
func TestStdioConn(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NEXUS_MCP_STDIO_SERVER=1")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	answer := func(req string) string {
		t.Helper()
		if _, err := in.Write([]byte(req + "\n")); err != nil {
			t.Fatal(err)
		}
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("no answer to %s within 10 s", req)
			return ""
		}
	}
	if got := answer(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`); !strings.Contains(got, `"stdio-test"`) {
		t.Fatalf("initialize: %s", got)
	}
	in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	// Pauses longer than the wait on the reading thread, and none.
	for _, pause := range []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 0} {
		time.Sleep(pause)
		if got := answer(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}`); !strings.Contains(got, `{\"n\":1}`) {
			t.Fatalf("after a %s pause: %s", pause, got)
		}
	}
	// A ping just before the end of input is answered too.
	in.Write([]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n"))
	in.Close()
	select {
	case l := <-lines:
		if !strings.Contains(l, `"id":3`) {
			t.Fatalf("the ping's answer: %s", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a ping just before the end of input went unanswered")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit at the end of input: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit within 10 s of its input's end")
	}

	null := exec.Command(os.Args[0], "-test.run=^$")
	null.Env = cmd.Env
	if err := null.Run(); err != nil { // stdin is /dev/null: EOF at once
		t.Fatalf("with stdin /dev/null: %v", err)
	}
}
