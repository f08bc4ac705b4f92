package console_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

const (
	adminToken  = "admin-0123456789abcdef0123"
	viewerToken = "viewer-0123456789abcdef012"
	agentToken  = "claude-0123456789abcdef012"
)

// served is a real `nexus serve` with its console.
type served struct {
	headless     bool // no --console
	pid          int
	mcp, console string // base URLs
	audit        string // the audit log's path
	stderr       *testenv.Buffer
}

// serve starts `nexus serve --listen --console` on loopback ports the
// system picks, in front of the built-in test server, and stops it (by
// its pid, SIGTERM, then SIGKILL after a bound) when the test ends.
func serve(t *testing.T) *served {
	t.Helper()
	bin := testenv.Nexus(t)
	dir := t.TempDir()
	s := &served{audit: filepath.Join(dir, "audit.jsonl"), stderr: &testenv.Buffer{}}
	cfg := fmt.Sprintf(`
variable "admin" {
  sensitive = true
  env       = "CONSOLE_ADMIN"
}
variable "viewer" {
  sensitive = true
  env       = "CONSOLE_VIEWER"
}
variable "claude" {
  sensitive = true
  env       = "CLAUDE_TOKEN"
}
server "testserver" {
  stdio {
    command = %q
    args    = ["testserver"]
  }
}
agent "claude" {
  permission = "yolo"
  tokens     = [var.claude]
}
audit {
  path              = %q
  include_arguments = true
}
console {
  tokens          = [var.admin]
  readonly_tokens = [var.viewer]
}
`, bin, s.audit)
	path := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return start(t, bin, path, s)
}

// env is the environment every nexus of the tests runs with: the tokens
// in it, HOME the config's directory.
func env(dir string) []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "CONSOLE_ADMIN=" + adminToken, "CONSOLE_VIEWER=" + viewerToken, "CLAUDE_TOKEN=" + agentToken}
}

// start runs `nexus serve` with the config at path (and more args), on
// ports the system picks, until the test ends.
func start(t *testing.T, bin, path string, s *served, args ...string) *served {
	t.Helper()
	base := []string{"serve", "--config", path, "--listen", "127.0.0.1:0", "--console", "127.0.0.1:0"}
	if s.headless {
		base = base[:len(base)-2]
	}
	cmd := exec.Command(bin, append(base, args...)...)
	cmd.Env = env(filepath.Dir(path))
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			s.stderr.Write([]byte(sc.Text() + "\n"))
			select {
			case lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("nexus serve's stderr:\n%s", s.stderr.String())
		}
	})
	deadline := time.After(60 * time.Second)
	for s.mcp == "" || s.console == "" && !s.headless {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("nexus serve ended before serving; stderr:\n%s", s.stderr.String())
			}
			if u, ok := strings.CutPrefix(l, "nexus: serving the console at "); ok {
				s.console = strings.TrimSuffix(u, "/")
			}
			if u, ok := strings.CutPrefix(l, "nexus: serving MCP at "); ok {
				s.mcp = u
			}
		case <-deadline:
			t.Fatalf("nexus serve did not say where it serves within 60 s; stderr:\n%s", s.stderr.String())
		}
	}
	return s
}

// client is a real MCP client of the gateway, as agent claude.
func client(t *testing.T, url string) *mcp.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := httptransport.Dial(ctx, httptransport.Config{Server: "gw", URL: url,
		Options: httptransport.Options{AllowPrivateNetworks: true, Headers: map[string]string{"Authorization": "Bearer " + agentToken}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConsole drives the console of a real `nexus serve` in Chromium: log
// in, watch a real client's call arrive live, open its explain trace,
// end a session as admin (audited), and be refused as a read-only user
// and from another site. Each page is screenshotted and checked by
// axe-core.
func TestConsole(t *testing.T) {
	s := serve(t)
	browser := newBrowser(t)
	shots := artifacts(t)
	admin := person(t, browser)
	c := client(t, s.mcp)

	t.Run("login", func(t *testing.T) {
		do(t, admin, "login page", chromedp.Navigate(s.console+"/"), chromedp.WaitVisible(chromedp.ID("token")))
		shot(t, admin, shots, "login")
		axe(t, admin, "login")
		// A wrong token is refused, and says so.
		do(t, admin, "wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-a-token-of-the-console"), chromedp.Submit(chromedp.ID("token")),
			chromedp.WaitVisible(chromedp.CSS(".error")))
		if text := eval[string](t, admin, `document.querySelector(".error").textContent`); !strings.Contains(text, "not one of the console's") {
			t.Errorf("a wrong token: %q", text)
		}
		login(t, admin, s.console, adminToken)
		who := eval[string](t, admin, `document.querySelector(".logout span").textContent`)
		if who != "admin token 1 (admin)" {
			t.Errorf("logged in as %q", who)
		}
		cookie := eval[string](t, admin, `document.cookie`)
		if cookie != "" {
			t.Errorf("the session cookie is readable from script (not HttpOnly): %q", cookie)
		}
		shot(t, admin, shots, "overview")
		axe(t, admin, "overview")
		page := eval[string](t, admin, `document.documentElement.outerHTML`)
		for _, secret := range []string{adminToken, viewerToken, agentToken} {
			if strings.Contains(page, secret) {
				t.Errorf("the overview shows a token from config")
			}
		}
		if !strings.Contains(page, "testserver") {
			t.Errorf("the overview does not list the server:\n%s", page)
		}
	})

	var id string
	t.Run("live", func(t *testing.T) {
		do(t, admin, "decisions page", chromedp.Navigate(s.console+"/decisions?agent=claude"),
			until(`document.getElementById("status").textContent.startsWith("Live")`))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := c.CallTool(ctx, "mcp_testserver_echo", map[string]any{"message": "seen live", "api_key": "sk-live-0123456789abcdefghijklmnop"}, nil); err != nil {
			t.Fatal(err)
		}
		do(t, admin, "the call in the stream", chromedp.WaitVisible(chromedp.CSS(`#live tbody tr`)))
		row := eval[string](t, admin, `document.querySelector("#live tbody tr").textContent`)
		if !strings.Contains(row, "mcp_testserver_echo") || !strings.Contains(row, "allow") || !strings.Contains(row, "claude") {
			t.Errorf("live row: %q", row)
		}
		id = eval[string](t, admin, `document.querySelector("#live tbody tr").dataset.id`)
		shot(t, admin, shots, "decisions")
		axe(t, admin, "decisions")
	})

	t.Run("explain", func(t *testing.T) {
		do(t, admin, "open the trace", chromedp.Click(chromedp.CSS(`#live tbody tr a`)), chromedp.WaitVisible(chromedp.CSS(`.facts`)))
		text := eval[string](t, admin, `document.querySelector("main").innerText`)
		for _, want := range []string{"Decision " + id, "mcp_testserver_echo", "allow", "Trace", "permission"} {
			if !strings.Contains(text, want) {
				t.Errorf("the trace lacks %q:\n%s", want, text)
			}
		}
		if strings.Contains(text, "sk-live-0123456789abcdefghijklmnop") {
			t.Errorf("the trace shows an argument the audit log redacted:\n%s", text)
		}
		shot(t, admin, shots, "explain")
		axe(t, admin, "explain")
	})

	t.Run("overview after the call", func(t *testing.T) {
		// The agent's connection to the server is up now: the overview
		// shows it as the gateway's sessions see it, with its era.
		do(t, admin, "overview", navigate(s.console+"/"), chromedp.WaitVisible(chromedp.CSS("main table")))
		row := eval[string](t, admin, `[...document.querySelectorAll("main tr")].map(r => r.innerText).find(t => t.startsWith("testserver")) || ""`)
		if !strings.Contains(row, "connected") || !strings.Contains(row, "2025-11-25") || !strings.Contains(row, "stdio") {
			t.Errorf("the server's row: %q", row)
		}
		agents := eval[string](t, admin, `document.querySelector("section.replica table.agents tbody").innerText`)
		if !strings.Contains(agents, "claude\t1\t1") {
			t.Errorf("the agents: %q, want claude with 1 session and 1 call in the last minute", agents)
		}
	})

	viewer := person(t, browser)
	t.Run("read-only", func(t *testing.T) {
		login(t, viewer, s.console, viewerToken)
		do(t, viewer, "sessions", chromedp.Navigate(s.console+"/sessions"), chromedp.WaitVisible(chromedp.CSS("main table")))
		if n := eval[int](t, viewer, `document.querySelectorAll('form[action="/sessions/end"]').length`); n != 0 {
			t.Errorf("a read-only user is offered %d end-session forms", n)
		}
		sid := eval[string](t, viewer, `document.querySelector("main tbody code").textContent`)
		// The POST itself, with the viewer's own valid CSRF token, is refused.
		status := eval[int](t, viewer, fmt.Sprintf(`fetch("/sessions/end", {method: "POST", body: new URLSearchParams({csrf: document.querySelector('input[name=csrf]').value, id: %q, reason: "try"})}).then(r => r.status)`, sid))
		if status != http.StatusForbidden {
			t.Errorf("a read-only user's end-session POST: status %d, want 403", status)
		}
		shot(t, viewer, shots, "sessions-readonly")
		axe(t, viewer, "sessions")
	})

	t.Run("cross-site", func(t *testing.T) {
		sid := eval[string](t, admin, `fetch("/sessions").then(r => r.text()).then(h => new DOMParser().parseFromString(h, "text/html").querySelector("main tbody code").textContent)`)
		// A page on another origin posts a form to the console, in the
		// admin's browser, with a made-up CSRF token.
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<!doctype html><html lang="en"><body><form id="f" method="post" action="%s/sessions/end"><input name="csrf" value="x"><input name="id" value="%s"><input name="reason" value="evil"></form><script>document.getElementById("f").submit()</script></body></html>`, s.console, sid)
		}))
		defer evil.Close()
		do(t, admin, "the other site's page", chromedp.Navigate(evil.URL), chromedp.WaitVisible(chromedp.CSS(".error")))
		text := eval[string](t, admin, `document.querySelector(".error").textContent`)
		if !strings.Contains(text, "did not come from the console") {
			t.Errorf("cross-site post: %q", text)
		}
		shot(t, admin, shots, "refused")
		if n := eval[int](t, admin, `fetch("/sessions").then(r => r.text()).then(h => (h.match(/<code>/g) || []).length)`); n == 0 {
			t.Errorf("the cross-site post ended the session")
		}
	})

	t.Run("end session", func(t *testing.T) {
		do(t, admin, "sessions", chromedp.Navigate(s.console+"/sessions"), chromedp.WaitVisible(chromedp.CSS(`form[action="/sessions/end"]`)))
		shot(t, admin, shots, "sessions")
		axe(t, admin, "sessions (admin)")
		sid := eval[string](t, admin, `document.querySelector('form[action="/sessions/end"] input[name=id]').value`)
		do(t, admin, "end it", chromedp.SendKeys(chromedp.CSS(`form[action="/sessions/end"] input[name=reason]`), "incident 42"),
			chromedp.Submit(chromedp.CSS(`form[action="/sessions/end"] input[name=reason]`)))
		eventually(t, admin, "the session ended", fmt.Sprintf(`document.readyState == "complete" && location.pathname == "/sessions" && !document.body.innerHTML.includes(%q)`, sid))
		// The audit log names who ended it and why.
		b, err := os.ReadFile(s.audit)
		if err != nil {
			t.Fatal(err)
		}
		var rec string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"console/session/end"`) {
				rec = l
			}
		}
		if !strings.Contains(rec, "admin token 1") || !strings.Contains(rec, "incident 42") || !strings.Contains(rec, sid) {
			t.Errorf("audit record of the end: %q", rec)
		}
		for _, secret := range []string{adminToken, viewerToken, agentToken, "sk-live-0123456789abcdefghijklmnop"} {
			if strings.Contains(s.stderr.String(), secret) {
				t.Errorf("the gateway's log shows a secret")
			}
		}
	})
}
