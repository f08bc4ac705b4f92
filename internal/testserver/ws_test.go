package testserver

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nexus-mcp/nexus/host/mcp"
)

func TestWebSocket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ServeWSListener(sctx, Options{}, ln) }()
	url := "ws://" + ln.Addr().String() + "/mcp"

	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{WSSubprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(mcp.MaxFrameSize)
	c, err := mcp.Connect(ctx, NewWSConn(ws), mcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "over websocket"}, nil)
	if err != nil || !strings.Contains(res.Content[0].Text, "over websocket") {
		t.Fatalf("echo: %+v %v", res, err)
	}
	// Progress notifications travel as their own frames.
	var got int
	_, err = c.CallTool(ctx, "slow_operation", map[string]any{"steps": 3, "duration": 0.1}, &mcp.CallOptions{OnProgress: func(mcp.Progress) { got++ }})
	if err != nil || got == 0 {
		t.Fatalf("slow_operation: %v, %d progress notifications", err, got)
	}
	c.Close()

	// Without the subprotocol the server refuses the session.
	ws2, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = ws2.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusProtocolError || !strings.Contains(err.Error(), "must offer the WebSocket subprotocol") {
		t.Fatalf("no subprotocol: %v", err)
	}

	stop()
	if err := <-done; err != context.Canceled {
		t.Errorf("ServeWSListener returned %v", err)
	}
}
