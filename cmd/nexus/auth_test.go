package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// nexusHome runs the binary on dir/mcp.json in dir, which is also HOME, so
// that token files stay between runs.
func nexusHome(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := testenv.Nexus(t)
	cmd := exec.Command(bin, append([]string{"--config", "mcp.json"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// clientCredentialsServer is the test server behind a bearer token, with
// an authorization server on the same loopback origin that issues tokens
// by the client-credentials grant.
func clientCredentialsServer(t *testing.T) string {
	t.Helper()
	ts := testserver.NewHTTPHandler(testserver.Options{})
	t.Cleanup(func() { ts.Close() })
	var base string
	mux := http.NewServeMux()
	js := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}, "scopes_supported": []string{"mcp"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		js(w, map[string]any{"issuer": base, "token_endpoint": base + "/token", "authorization_endpoint": base + "/authorize",
			"grant_types_supported": []string{"client_credentials"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		if id, secret, _ := r.BasicAuth(); id != "svc" || secret != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			js(w, map[string]string{"error": "invalid_client"})
			return
		}
		js(w, map[string]any{"access_token": "tok-cli", "token_type": "Bearer", "expires_in": 3600, "scope": "mcp"})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-cli" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+base+`/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		ts.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	return base + "/mcp"
}

func TestAuthCommands(t *testing.T) {
	url := clientCredentialsServer(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`{"servers": {"web": {"type": "http", "url": %q,
  "oauth": {"grant": "client_credentials", "client_id": "svc", "client_secret": "s3cret"}},
  "local": {"command": "nexus", "args": ["testserver"]}}}`, url)
	if err := os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := nexusHome(t, dir, "auth", "status", "web")
	if code != 0 || !strings.Contains(out, "web ("+url+"): not logged in") {
		t.Fatalf("status before login (%d):\n%s%s", code, out, errOut)
	}
	out, errOut, code = nexusHome(t, dir, "auth", "login", "web")
	if code != 0 || !strings.Contains(out, "Logged in to web") || !strings.Contains(out, "client_credentials") {
		t.Fatalf("login (%d):\n%s%s", code, out, errOut)
	}
	files, _ := filepath.Glob(filepath.Join(dir, ".nexus", "tokens", "*"))
	if len(files) != 1 {
		t.Fatalf("token files: %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", fi.Mode(), err)
	}
	if data, _ := os.ReadFile(files[0]); strings.Contains(string(data), "s3cret") {
		t.Error("the client secret was written to the token file")
	}
	out, errOut, code = nexusHome(t, dir, "auth", "status", "--output", "json")
	var st []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || len(st) != 1 || st[0]["logged_in"] != true || st[0]["server"] != "web" {
		t.Fatalf("status json (%d):\n%s%s", code, out, errOut)
	}
	// The stored token is used: the call goes through without a new login.
	out, errOut, code = nexusHome(t, dir, "--yes", "call", "web.echo", "message=with a token")
	if code != 0 || !strings.Contains(out, "with a token") {
		t.Fatalf("call (%d):\n%s%s", code, out, errOut)
	}
	out, errOut, code = nexusHome(t, dir, "auth", "logout", "web")
	if code != 0 || !strings.Contains(out, "Logged out of web") {
		t.Fatalf("logout (%d):\n%s%s", code, out, errOut)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, ".nexus", "tokens", "*")); len(files) != 0 {
		t.Fatalf("token files after logout: %v", files)
	}
	out, errOut, code = nexusHome(t, dir, "auth", "status", "local")
	if code == 0 || !strings.Contains(out+errOut, "OAuth applies to http and sse servers only") {
		t.Fatalf("status of a stdio server (%d):\n%s%s", code, out, errOut)
	}
}

func TestTestserverHTTP(t *testing.T) {
	bin := testenv.Nexus(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "testserver", "--http", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "MCP endpoint (streamable HTTP): "
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("first line: %q", line)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, prefix))
	out, errOut, code := nexus(t, fmt.Sprintf(`{"servers": {"web": {"type": "http", "url": %q}}}`, url), nil, "--config", "mcp.json", "tools")
	if code != 0 || !strings.Contains(out, "echo") {
		t.Fatalf("tools over HTTP (%d):\n%s%s", code, out, errOut)
	}
}
