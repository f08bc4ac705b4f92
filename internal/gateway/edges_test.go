package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// A client that closes its POST before the answer cancels the call
// upstream (notifications/cancelled), as an explicit cancellation does
// (issue 37: the upstream call ran to its end).
func TestHTTPDisconnectCancelsUpstream(t *testing.T) {
	// Calls time out after 10 minutes, not 30 s: only the disconnection
	// can end this one before wait gives up.
	env := newEnvOpts(t, nil, func(o *engine.Options) { o.Timeout = 10 * time.Minute })
	e := serveEnv(t, env, gateway.HTTPOptions{})
	sid := e.open("claude-token")
	auth := map[string]string{"Authorization": "Bearer claude-token", "Mcp-Session-Id": sid}
	e.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+gateway.EndpointPath,
		strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mcp_probe_block"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range auth {
		req.Header.Set(k, v)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	wait(t, e.probe.started, "the upstream call to start")
	cancel()
	<-done
	wait(t, e.probe.cancelled, "the disconnected client's upstream call to be cancelled")
}

// Two Authorization headers are refused, whichever would have counted.
func TestHTTPDuplicateAuthorization(t *testing.T) {
	e := newHTTPEnv(t, gateway.HTTPOptions{})
	req, _ := http.NewRequest(http.MethodPost, e.url+gateway.EndpointPath, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Add("Authorization", "Bearer claude-token")
	req.Header.Add("Authorization", "Bearer ci-token")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(string(b), "send exactly one") {
		t.Errorf("got %d %s", resp.StatusCode, b)
	}
}

// Without Origin, the Host must be a name the gateway is known by (DNS
// rebinding).
func TestHTTPHostCheck(t *testing.T) {
	e := newEnv(t, nil)
	hh, err := e.g.HTTP(gateway.HTTPOptions{Agent: "claude", AllowedHosts: []string{"nexus.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hh.Serve(ctx, ln, gateway.ListenOptions{Grace: time.Second}) }()
	defer func() { cancel(); <-done }()
	defer client.CloseIdleConnections()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	try := func(host, origin string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+gateway.EndpointPath, strings.NewReader(initBody))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"rebind.example:" + port, "rebind.example", "localhost.rebind.example"} {
		if code, body := try(host, ""); code != http.StatusForbidden || !strings.Contains(body, "is not a name this gateway (listening on 127.0.0.1:"+port+") is known by") ||
			!strings.Contains(body, "allowed_hosts") || !strings.Contains(body, "DNS rebinding") {
			t.Errorf("Host %s: %d %s", host, code, body)
		}
	}
	// Names it is known by, and addresses (no rebinding attack sends one),
	// with whatever port a proxy put there.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "localhost", "localhost:1", "10.1.2.3:" + port,
		"nexus.example.com", "NEXUS.example.com:443"} {
		if code, body := try(host, ""); code != http.StatusOK {
			t.Errorf("Host %s: %d %s", host, code, body)
		}
	}
	// With an Origin, the Origin check decides.
	if code, body := try("rebind.example:"+port, "http://localhost:"+port); code != http.StatusOK {
		t.Errorf("a loopback Origin: %d %s", code, body)
	}
}

// A session whose record the store refuses (a clientInfo over the
// record's limit) is not opened: an error, and no session id (issue 37:
// the id came with the error, and worked).
func TestHTTPStoreRefusalOpensNoSession(t *testing.T) {
	eachStore(t, func(t *testing.T, st store.Store) {
		e := newHTTPEnv(t, gateway.HTTPOptions{Store: st})
		big := strings.Repeat("x", store.MaxSessionBytes+1)
		resp, body := e.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+big+`","version":"1"}}}`,
			map[string]string{"Authorization": "Bearer claude-token"})
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" || !strings.Contains(body, "did not record the session") {
			t.Errorf("got %d, session %q, %.300s", resp.StatusCode, sid, body)
		}
		// The session's end is asynchronous: wait for it (the bound is
		// generous; it ends at once).
		for deadline := time.Now().Add(30 * time.Second); e.g.Sessions() != 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d sessions after a refused initialize", e.g.Sessions())
			}
		}
	})
}

// trickle sends a POST's headers and one byte of the 1000 its
// Content-Length promises, and returns the answer's status line and body
// and whether the server then closed the connection. The read deadline
// (30 s) is a generous bound on an answer that comes at once.
func trickle(url, hdr string) (status, body string, closed bool) {
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err.Error(), "", false
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 1000\r\n\r\n{",
		gateway.EndpointPath, addr, hdr)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "no answer: " + err.Error(), "", false
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, err = br.ReadByte()
	return resp.Status, string(b), errors.Is(err, io.EOF)
}

// Unauthenticated POSTs whose bodies trickle in get 401 at once, unread,
// and their connections close (issue 37: 200 of them were all held); an
// authenticated one gets body_timeout, then 408.
func TestHTTPSlowBodies(t *testing.T) {
	e := newHTTPEnv(t, gateway.HTTPOptions{Limits: config.GatewayLimits{BodyTimeout: 100 * time.Millisecond}})
	type result struct {
		status string
		closed bool
	}
	res := make(chan result, 20)
	for i := range 20 {
		hdr := ""
		if i%2 == 1 {
			hdr = "Authorization: Bearer wrong\r\n"
		}
		go func() {
			s, _, c := trickle(e.url, hdr)
			res <- result{s, c}
		}()
	}
	for range 20 {
		if r := <-res; !strings.HasPrefix(r.status, "401") || !r.closed {
			t.Errorf("got %q, closed %v; want 401 and the connection closed", r.status, r.closed)
		}
	}
	s, body, closed := trickle(e.url, "Authorization: Bearer claude-token\r\n")
	if !strings.HasPrefix(s, "408") || !closed || !strings.Contains(body, "gateway { limits { body_timeout") {
		t.Errorf("a trickling body: %q %s, closed %v", s, body, closed)
	}
}
