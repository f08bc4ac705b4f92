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
	"github.com/nexus-mcp/nexus/internal/explain"
	hostplugin "github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/testserver"
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

// session dials the server through the real plugin binary.
func session(t *testing.T, p *hostplugin.Plugin, cfg map[string]any) (*mcp.Client, error) {
	t.Helper()
	ctx := ctxT(t)
	tr, err := p.Transport(plugintest.Server("remote", "ws", cfg))
	if err != nil {
		return nil, err
	}
	conn, err := tr.Dial(ctx)
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
	if err != nil || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "over websocket") {
		t.Fatalf("echo: %+v %v", res, err)
	}
}

func TestEndToEnd(t *testing.T) {
	// Built (or found built) before the clock starts: a cold build on a
	// loaded machine can take most of a deadline that began earlier.
	_, p, _ := plugintest.Open(t, ".", "ws")
	ctx := ctxT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go testserver.ServeWSListener(sctx, testserver.Options{}, ln)

	if info := p.Info(); info.Name != "transport-websocket" || len(info.Schemas["transport"]) == 0 {
		t.Errorf("info %+v", info)
	}
	c, err := session(t, p, map[string]any{"url": "ws://" + ln.Addr().String() + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c)
	tools, err := c.ListTools(ctx)
	if err != nil || len(tools) < 4 {
		t.Fatalf("tools: %d %v", len(tools), err)
	}
}

func TestHeadersAndTLS(t *testing.T) {
	ws := testserver.WSHandler(testserver.Options{})
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
	_, p, _ := plugintest.Open(t, ".", "ws")

	c, err := session(t, p, map[string]any{"url": url, "headers": map[string]any{"Authorization": "Bearer s3cret"}, "tls": map[string]any{"ca_file": ca}})
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c)

	_, err = session(t, p, map[string]any{"url": url, "tls": map[string]any{"ca_file": ca}})
	var oe *hostplugin.OpenError
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
	_, p, _ := plugintest.Open(t, ".", "ws")
	tr, err := p.Transport(plugintest.Server("remote", "ws", map[string]any{
		"url": "ws" + strings.TrimPrefix(srv.URL, "http"), "ping_interval": "100ms", "ping_timeout": "200ms"}))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tr.Dial(ctxT(t))
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
	_, p, _ := plugintest.Open(t, ".", "ws")
	_, err := p.Transport(plugintest.Server("remote", "ws", map[string]any{"url": "http://example.com", "ping_interval": "soon"}))
	err = explain.Error(err) // the report the host shows, with the config's source
	var ce *hostplugin.ConfigError
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
