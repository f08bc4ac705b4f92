package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// serveLoopback runs h on 127.0.0.1 for the test.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func testserverHTTP(t *testing.T, mw func(http.Handler) http.Handler) string {
	t.Helper()
	ts := testserver.NewHTTPHandler(testserver.Options{})
	t.Cleanup(func() { ts.Close() })
	var h http.Handler = ts
	if mw != nil {
		h = mw(ts)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	return serveLoopback(t, mux) + "/mcp"
}

func TestHTTPServerThroughHost(t *testing.T) {
	url := testserverHTTP(t, nil)
	for _, typ := range []string{"http"} {
		h := newHost(t, fmt.Sprintf(`{"servers":{"web":{"type":%q,"url":%q}}}`, typ, url), engine.Options{Timeout: 10 * time.Second})
		ctx := context.Background()
		tools, err := h.Tools(ctx, engine.CLIAgent)
		if err != nil || len(tools) == 0 {
			t.Fatalf("tools: %v %v", err, tools)
		}
		c, err := h.Client(ctx, engine.CLIAgent, "web")
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.CallTool(ctx, "echo", map[string]any{"message": "over http"}, nil)
		if err != nil || !strings.Contains(res.Content[0].Text, "over http") {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
}

// A server behind basic authentication, its credentials in the URL's
// user information, is reached with them: the transport sends them, and
// the host gives such a server no OAuth client (an OAuth resource URL has
// no user information, and the client refused the URL, failing every
// call with an OAuth configuration error).
func TestHTTPBasicAuthInURL(t *testing.T) {
	var refused atomic.Int32
	raw := testserverHTTP(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "ada" || p != "pa55" {
				refused.Add(1)
				http.Error(w, "who are you", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	url := strings.Replace(raw, "http://", "http://ada:pa55@", 1)
	h := newHost(t, fmt.Sprintf(`{"servers":{"web":{"type":"http","url":%q}}}`, url), engine.Options{Timeout: 10 * time.Second})
	if tools, err := h.Tools(context.Background(), engine.CLIAgent); err != nil || len(tools) == 0 {
		t.Fatalf("tools: %v %v", err, tools)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d requests went without the credentials", n)
	}
}

// oauthProtected puts the test server behind a bearer token that a tiny
// authorization server on the same origin issues by client credentials.
func oauthProtected(t *testing.T) (url string, tokens *atomic.Int32) {
	t.Helper()
	tokens = &atomic.Int32{}
	var base string
	ts := testserver.NewHTTPHandler(testserver.Options{})
	t.Cleanup(func() { ts.Close() })
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer": base, "token_endpoint": base + "/token", "authorization_endpoint": base + "/authorize",
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
			"code_challenge_methods_supported":      []string{"S256"},
		})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if !ok || id != "svc" || secret != "s3cret" || r.PostFormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			writeJSON(w, map[string]string{"error": "invalid_client"})
			return
		}
		tokens.Add(1)
		writeJSON(w, map[string]any{"access_token": "tok-good", "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-good" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
			return
		}
		ts.ServeHTTP(w, r)
	})
	base = serveLoopback(t, mux)
	return base + "/mcp", tokens
}

func TestHTTPOAuthThroughHost(t *testing.T) {
	url, tokens := oauthProtected(t)
	cfg := fmt.Sprintf(`{"servers":{"web":{"type":"http","url":%q,
  "oauth":{"grant":"client_credentials","client_id":"svc","client_secret":"s3cret"}}}}`, url)
	dir := t.TempDir()
	h := newHost(t, cfg, engine.Options{Timeout: 10 * time.Second, Auth: engine.AuthOptions{TokenDir: dir}})
	ctx := context.Background()

	// The first request gets 401; the host's OAuth client discovers the
	// authorization server, gets a token and the request goes through.
	c, err := h.Client(ctx, engine.CLIAgent, "web")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "authorized"}, nil)
	if err != nil || !strings.Contains(res.Content[0].Text, "authorized") {
		t.Fatalf("call: %v %+v", err, res)
	}
	if tokens.Load() != 1 {
		t.Errorf("%d tokens issued", tokens.Load())
	}
	st, err := h.AuthStatus("web")
	if err != nil || !st.LoggedIn || st.Grant != "client_credentials" || st.ClientID != "svc" || !strings.HasPrefix(st.File, dir) {
		t.Fatalf("status: %v %+v", err, st)
	}
	if err := h.AuthLogout(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.AuthStatus("web"); st.LoggedIn {
		t.Fatalf("still logged in: %+v", st)
	}
	if err := h.AuthLogin(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.AuthStatus("web"); !st.LoggedIn || tokens.Load() != 2 {
		t.Fatalf("after login: %+v, %d tokens", st, tokens.Load())
	}

	// Auth commands name HTTP servers only.
	if _, err := h.AuthStatus("nope"); err == nil {
		t.Error("unknown server: no error")
	}
}

func TestAuthCommandsNeedHTTPServer(t *testing.T) {
	h := newHost(t, `{"servers":{"local":{"command":"true"}}}`, engine.Options{})
	_, err := h.AuthStatus("local")
	var nh *engine.NotHTTPServerError
	if err == nil || !strings.Contains(err.Error(), "OAuth applies to http and sse servers only") {
		t.Fatalf("%T %v", nh, err)
	}
}

func TestHTTPErrorsExplained(t *testing.T) {
	ctx := context.Background()
	t.Run("404", func(t *testing.T) {
		url := serveLoopback(t, http.NotFoundHandler())
		h := newHost(t, fmt.Sprintf(`{"servers":{"fake":{"type":"http","url":%q}}}`, url+"/mcp"), engine.Options{Timeout: 5 * time.Second})
		_, err := h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "MCP HTTP Error", "HTTP 404", "/mcp", "Legacy HTTP+SSE fallback")
	})
	t.Run("refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		h := newHost(t, fmt.Sprintf(`{"servers":{"fake":{"type":"http","url":"http://%s/mcp","http_max_retries":0}}}`, addr), engine.Options{Timeout: 5 * time.Second})
		_, err = h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "MCP Connection Failed", "not running", "connection refused")
	})
	t.Run("redirect", func(t *testing.T) {
		url := serveLoopback(t, http.RedirectHandler("http://169.254.169.254/latest", http.StatusFound))
		h := newHost(t, fmt.Sprintf(`{"servers":{"fake":{"type":"http","url":%q}}}`, url+"/mcp"), engine.Options{Timeout: 5 * time.Second})
		_, err := h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "redirect", "169.254.169.254", "final address")
	})
	t.Run("401 without an authorization server", func(t *testing.T) {
		url := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
			http.Error(w, "no", http.StatusUnauthorized)
		}))
		h := newHost(t, fmt.Sprintf(`{"servers":{"fake":{"type":"http","url":%q}}}`, url+"/mcp"), engine.Options{Timeout: 5 * time.Second, Auth: engine.AuthOptions{NoStore: true}})
		_, err := h.Client(ctx, engine.CLIAgent, "fake")
		wantReport(t, err, "OAuth")
	})
}
