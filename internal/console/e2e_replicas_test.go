package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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

// TestOverviewReplicas runs three real `nexus serve` sharing a real Redis
// as their session store, two with a console and one without: each
// console's overview shows the three replicas, the others with the
// session a client holds there; a replica killed (no clean stop, so
// nothing removes its status) drops off the others' overview when its
// status expires.
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
	c := start(t, bin, path, &served{stderr: &testenv.Buffer{}, headless: true}, "--session-store", redisURL)
	client(t, b.mcp) // one session, held by b
	client(t, c.mcp) // and one by c
	client(t, c.mcp) // and another

	cookieA, cookieB := cookieFor(t, a.console, adminToken), cookieFor(t, b.console, adminToken)
	host, _ := os.Hostname()
	name := func(s *served) string { return fmt.Sprintf("%s (pid %d)", host, s.pid) }
	// Rows are sorted by name after this replica's; the pids order them.
	others := func(self *served, rows ...[2]string) []string {
		out := []string{name(self) + " (this one) " + redisURL + " " + rows[0][1] + " 1 now"}
		rest := rows[1:]
		slices.SortFunc(rest, func(x, y [2]string) int { return strings.Compare(x[0], y[0]) })
		for _, r := range rest {
			out = append(out, r[0]+" "+redisURL+" "+r[1]+" 1 ")
		}
		return out
	}
	rows, page := waitRows(t, a.console, cookieA, "replica a's overview", others(a, [2]string{name(a), "0"}, [2]string{name(b), "1"}, [2]string{name(c), "2"})...)
	t.Logf("replica a's rows: %q", rows)
	if !strings.Contains(page, "testserver") {
		t.Error("replica a's overview lacks the server")
	}
	waitRows(t, b.console, cookieB, "replica b's overview", others(b, [2]string{name(b), "1"}, [2]string{name(a), "0"}, [2]string{name(c), "2"})...)

	// Killed, b removes nothing: its status expires (10 s after its
	// last report).
	if err := syscall.Kill(b.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitRows(t, a.console, cookieA, "replica b killed", others(a, [2]string{name(a), "0"}, [2]string{name(c), "2"})...)
}
