package main

import (
	"context"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/sdk/plugin"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mcpHandler serves plugintest's echo server over WebSocket, one
// JSON-RPC message per text frame (the plugin's own framing, conn, at the
// server's end), to clients that offer the subprotocol "mcp".
func mcpHandler() http.Handler {
	srv := plugintest.EchoServer()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
		if err != nil {
			return // Accept has answered the request
		}
		if ws.Subprotocol() != "mcp" {
			ws.Close(websocket.StatusProtocolError, `offer the subprotocol "mcp"`)
			return
		}
		ws.SetReadLimit(plugin.MaxFrameSize)
		c := newConn(ws, 0, 0)
		defer c.Close()
		srv.Serve(r.Context(), c)
	})
}

// session dials the server through the real plugin binary.
func session(t *testing.T, p *plugintest.Plugin, cfg map[string]any) (*mcp.Client, error) {
	t.Helper()
	ctx := ctxT(t)
	conn, err := p.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return c, nil
}

func echo(t *testing.T, c *mcp.Client) {
	t.Helper()
	res, err := c.CallTool(ctxT(t), "echo", map[string]any{"message": "over websocket"}, nil)
	if err != nil || len(res.Content) == 0 || res.Content[0].Text != "echo: over websocket" {
		t.Fatalf("echo: %+v %v", res, err)
	}
}

func TestEndToEnd(t *testing.T) {
	// Built (or found built) before the clock starts: a cold build on a
	// loaded machine can take most of a deadline that began earlier.
	p := plugintest.Start(t, ".", "ws")
	srv := httptest.NewServer(mcpHandler())
	defer srv.Close()

	if info := p.Info(); info.Name != "transport-websocket" || len(info.Schemas["transport"]) == 0 {
		t.Errorf("info %+v", info)
	}
	c, err := session(t, p, map[string]any{"url": "ws" + strings.TrimPrefix(srv.URL, "http") + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c)
	tools, err := c.ListTools(ctxT(t))
	if err != nil || len(tools) != 1 || tools[0].Name != "echo" {
		t.Fatalf("tools: %+v %v", tools, err)
	}
}

func TestHeadersAndTLS(t *testing.T) {
	ws := mcpHandler()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		ws.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "wss" + strings.TrimPrefix(srv.URL, "https")
	p := plugintest.Start(t, ".", "ws")

	c, err := session(t, p, map[string]any{"url": url, "headers": map[string]any{"Authorization": "Bearer s3cret"}, "tls": map[string]any{"ca_file": ca}})
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c)

	_, err = session(t, p, map[string]any{"url": url, "tls": map[string]any{"ca_file": ca}})
	var oe *plugintest.OpenError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Errorf("without the header: %v", err)
	}
	_, err = session(t, p, map[string]any{"url": url, "headers": map[string]any{"Authorization": "Bearer s3cret"}})
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}
}

func TestPingKeepalive(t *testing.T) {
	// A server that accepts and then never reads: pings go unanswered.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"mcp"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		<-r.Context().Done()
	}))
	defer srv.Close()
	p := plugintest.Start(t, ".", "ws")
	conn, err := p.Dial(ctxT(t), map[string]any{
		"url": "ws" + strings.TrimPrefix(srv.URL, "http"), "ping_interval": "100ms", "ping_timeout": "200ms"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The error's words say the keepalive ended the read. The watchdog
	// only turns "no keepalive at all" (a read that never returns) into a
	// failure instead of a hung test; it is hundreds of ping timeouts long,
	// so a loaded machine does not trip it.
	read := make(chan error, 1)
	go func() {
		_, err := conn.ReadMessage()
		read <- err
	}()
	watchdog := time.NewTimer(60 * time.Second)
	defer watchdog.Stop()
	select {
	case err = <-read:
	case <-watchdog.C: // the deferred Close ends the read
		t.Fatal("the read on a connection whose peer answers no ping never ended: no keepalive")
	}
	if err == nil || !strings.Contains(err.Error(), "did not answer a ping within 200ms") {
		t.Fatalf("got %v, want a keepalive error", err)
	}
}

func TestBadConfig(t *testing.T) {
	p := plugintest.Start(t, ".", "ws")
	// The report the host shows, with the config's source.
	_, err := p.Dial(ctxT(t), map[string]any{"url": "http://example.com", "ping_interval": "soon"})
	var ce *plugintest.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v", err)
	}
	for _, w := range []string{"/url", "/ping_interval", "nexus.hcl (project config), line 10"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("lacks %q:\n%v", w, err)
		}
	}
	// Nothing listens on this loopback port: a clear error at Dial.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err = session(t, p, map[string]any{"url": "ws://" + addr + "/"})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
}
