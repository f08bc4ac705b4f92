package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// cookieFor logs in to a console over HTTP with token and returns the
// session cookie.
func cookieFor(t *testing.T, base, token string) string {
	t.Helper()
	resp, _ := post(t, base+"/login", url.Values{"token": {token}}, map[string]string{"Origin": base})
	cookie, _, _ := strings.Cut(resp.Header.Get("Set-Cookie"), ";")
	if resp.StatusCode != http.StatusSeeOther || cookie == "" {
		t.Fatalf("login to %s: %d", base, resp.StatusCode)
	}
	return cookie
}

// TestOverviewReplicas runs two real `nexus serve` sharing a real Redis
// as their session store: each console's overview shows both replicas,
// the other with the session a client holds there; a replica killed
// (no clean stop, so nothing removes its status) drops off the other's
// overview when its status expires.
func TestOverviewReplicas(t *testing.T) {
	bin := testenv.Nexus(t)
	redisURL := testenv.RedisServer(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`
variable "admin" {
  sensitive = true
  env       = "CONSOLE_ADMIN"
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
console {
  tokens = [var.admin]
}
`, bin)
	path := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, bin, path, &served{stderr: &testenv.Buffer{}}, "--session-store", redisURL)
	b := start(t, bin, path, &served{stderr: &testenv.Buffer{}}, "--session-store", redisURL)
	client(t, b.mcp) // one session, held by b

	cookieA, cookieB := cookieFor(t, a.console, adminToken), cookieFor(t, b.console, adminToken)
	host, _ := os.Hostname()
	nameA, nameB := fmt.Sprintf("%s (pid %d)", host, a.pid), fmt.Sprintf("%s (pid %d)", host, b.pid)
	where := strings.TrimPrefix(redisURL, "redis://")
	rows, page := waitRows(t, a.console, cookieA, "replica a's overview", nameA+" (this one) redis://"+where+" 0 1 now", nameB+" redis://"+where+" 1 1 ")
	t.Logf("replica a's rows: %q", rows)
	if !strings.Contains(page, "testserver") {
		t.Error("replica a's overview lacks the server")
	}
	waitRows(t, b.console, cookieB, "replica b's overview", nameB+" (this one) redis://"+where+" 1 1 now", nameA+" redis://"+where+" 0 1 ")

	// Killed, b removes nothing: its status expires (10 s after its
	// last report).
	if err := syscall.Kill(b.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRows(t, a.console, cookieA, "replica b killed", nameA+" (this one)")
}
