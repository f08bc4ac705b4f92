package console_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// replicaConfig is one replica's config: the shared upstream, its own
// audit log ("": none, for nexus lock beside the running replicas). The replicas' configs sit in one directory, so they share
// the lockfile beside them.
func replicaConfig(t *testing.T, path, upstream, auditPath string) {
	t.Helper()
	auditBlock := ""
	if auditPath != "" {
		auditBlock = fmt.Sprintf("audit {\n  path = %q\n}", auditPath)
	}
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
server "rug" {
  http {
    url = %q
  }
}
agent "claude" {
  permission = "yolo"
  tokens     = [var.claude]
}
%s
console {
  tokens          = [var.admin]
  readonly_tokens = [var.viewer]
}
`, upstream, auditBlock)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// callEcho calls the upstream's echo tool through a gateway: "" when it
// answered, else why not.
func callEcho(t *testing.T, c *mcp.Client, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, "mcp_rug_echo", map[string]any{"message": msg}, nil)
	switch {
	case err != nil:
		return err.Error()
	case res.IsError:
		if len(res.Content) > 0 {
			return res.Content[0].Text
		}
		return "a tool error"
	}
	return ""
}

// waitEcho calls echo until refused says what it wants (true: refused),
// within a generous bound that starts with the wait.
func waitEcho(t *testing.T, c *mcp.Client, refused bool, what string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		why := callEcho(t, c, "now")
		if (why != "") == refused {
			return why
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not so within 60 s (last answer: %q)", what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLockfileDrift drives the lockfile page of a real `nexus serve` in
// Chromium, with a second replica beside it (the same config directory,
// so the same lockfile) in front of one upstream that pulls the rug: its
// echo tool turns poisoned mid-session. The rug pull shows as drift;
// a read-only user cannot accept it, nor can a form posted from another
// site; rejected, the tool stays withheld; accepted, the lockfile is
// written as nexus lock writes it, the audit log says who and why, and
// the next call through the second replica passes, with no restart.
func TestLockfileDrift(t *testing.T) {
	bin := testenv.Nexus(t)
	dir := t.TempDir()
	up := testserver.NewHTTPHandler(testserver.Options{Variant: testserver.VariantRugPull})
	ts := httptest.NewServer(up)
	t.Cleanup(func() { up.Close(); ts.Close() })
	upstream := ts.URL + testserver.EndpointPath

	pathA, pathB := filepath.Join(dir, "a.hcl"), filepath.Join(dir, "b.hcl")
	auditA := filepath.Join(dir, "audit-a.jsonl")
	replicaConfig(t, pathA, upstream, auditA)
	replicaConfig(t, pathB, upstream, filepath.Join(dir, "audit-b.jsonl"))
	pathL := filepath.Join(dir, "lock.hcl")
	replicaConfig(t, pathL, upstream, "")
	lockPath := filepath.Join(dir, "nexus.lock.hcl")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	lockCmd := exec.CommandContext(ctx, bin, "lock", "--config", pathL)
	lockCmd.Env = env(dir)
	if out, err := lockCmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Wrote") {
		t.Fatalf("nexus lock: %v\n%s", err, out)
	}
	pinned, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}

	a := start(t, bin, pathA, &served{audit: auditA, stderr: &testenv.Buffer{}})
	b := start(t, bin, pathB, &served{stderr: &testenv.Buffer{}})
	c := client(t, b.mcp)
	if why := callEcho(t, c, "before"); why != "" {
		t.Fatalf("echo as pinned, through replica b: %s", why)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer rcancel()
	if _, err := c.CallTool(rctx, "mcp_rug_rug_pull", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	why := waitEcho(t, c, true, "the rug-pulled echo withheld through replica b")
	if !strings.Contains(why, "lockfile") {
		t.Errorf("the refusal of the rug-pulled echo: %q", why)
	}

	browser := newBrowser(t)
	shots := artifacts(t)
	admin := person(t, browser)
	login(t, admin, a.console, adminToken)
	drift := func(t *testing.T, p context.Context, what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			do(t, p, what, navigate(a.console+"/lockfile"), chromedp.WaitVisible(chromedp.CSS("main p")))
			if eval[int](t, p, `document.querySelectorAll("section.drift").length`) > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no drift shown within 60 s:\n%s", what, eval[string](t, p, `document.querySelector("main").innerText`))
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	t.Run("drift", func(t *testing.T) {
		drift(t, admin, "the rug pull as drift")
		text := eval[string](t, admin, `document.querySelector("main").innerText`)
		for _, want := range []string{"rug: echo (changed)", "inputSchema.properties.notes", "id_rsa"} {
			if !strings.Contains(text, want) {
				t.Errorf("the drift lacks %q:\n%s", want, text)
			}
		}
		shot(t, admin, shots, "lockfile-drift")
		axe(t, admin, "lockfile (drift)")
	})

	t.Run("read-only", func(t *testing.T) {
		viewer := person(t, browser)
		login(t, viewer, a.console, viewerToken)
		drift(t, viewer, "the drift, read-only")
		if n := eval[int](t, viewer, `document.querySelectorAll("form.decide").length`); n != 0 {
			t.Errorf("a read-only user is offered %d accept forms", n)
		}
		sum := eval[string](t, admin, `document.querySelector("form.decide input[name=sha256]").value`)
		status := eval[int](t, viewer, fmt.Sprintf(`fetch("/lockfile/accept", {method: "POST", body: new URLSearchParams({csrf: document.querySelector('input[name=csrf]').value, server: "rug", tool: "echo", sha256: %q, reason: "try"})}).then(r => r.status)`, sum))
		if status != http.StatusForbidden {
			t.Errorf("a read-only user's accept: status %d, want 403", status)
		}
		shot(t, viewer, shots, "lockfile-readonly")
	})

	t.Run("cross-site", func(t *testing.T) {
		sum := eval[string](t, admin, `document.querySelector("form.decide input[name=sha256]").value`)
		evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `<!doctype html><html lang="en"><body><form id="f" method="post" action="%s/lockfile/accept"><input name="csrf" value="x"><input name="server" value="rug"><input name="tool" value="echo"><input name="sha256" value="%s"><input name="reason" value="evil"></form><script>document.getElementById("f").submit()</script></body></html>`, a.console, sum)
		}))
		defer evil.Close()
		do(t, admin, "the other site's page", navigate(evil.URL), chromedp.WaitVisible(chromedp.CSS(".error")))
		if text := eval[string](t, admin, `document.querySelector(".error").textContent`); !strings.Contains(text, "did not come from the console") {
			t.Errorf("a cross-site accept: %q", text)
		}
		if now, _ := os.ReadFile(lockPath); !bytes.Equal(now, pinned) {
			t.Error("a cross-site post changed the lockfile")
		}
	})

	t.Run("reject", func(t *testing.T) {
		drift(t, admin, "the drift, to reject")
		do(t, admin, "reject", chromedp.SendKeys(chromedp.CSS(`form.decide input[name=reason]`), "asks for ssh keys"),
			chromedp.Click(chromedp.CSS(`form.decide button.reject`)), chromedp.WaitVisible(chromedp.CSS(".note")))
		if text := eval[string](t, admin, `document.querySelector(".note").textContent`); !strings.Contains(text, "admin token 1") || !strings.Contains(text, "asks for ssh keys") {
			t.Errorf("the rejection shown: %q", text)
		}
		shot(t, admin, shots, "lockfile-rejected")
		if why := callEcho(t, c, "rejected"); why == "" {
			t.Error("the rejected definition was called through replica b")
		}
		if now, _ := os.ReadFile(lockPath); !bytes.Equal(now, pinned) {
			t.Error("a reject changed the lockfile")
		}
	})

	t.Run("accept", func(t *testing.T) {
		drift(t, admin, "the drift, to accept")
		do(t, admin, "accept", chromedp.SendKeys(chromedp.CSS(`form.decide input[name=reason]`), "reviewed in change 7"),
			chromedp.Click(chromedp.CSS(`form.decide button.accept`)))
		eventually(t, admin, "the drift accepted", `document.readyState == "complete" && location.pathname == "/lockfile" && document.querySelector("main").innerText.includes("No definition is withheld")`)
		shot(t, admin, shots, "lockfile-accepted")
		axe(t, admin, "lockfile (none withheld)")
		// The next call through the other replica passes: it learnt the
		// lockfile from the file, without a restart.
		waitEcho(t, c, false, "the accepted echo through replica b")

		// The lockfile is as nexus lock writes it: nexus lock --check
		// finds the servers as it pins them.
		cctx, ccancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer ccancel()
		check := exec.CommandContext(cctx, bin, "lock", "--check", "--config", pathL)
		check.Env = env(dir)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("nexus lock --check after the accept: %v\n%s", err, out)
		}
		// The accept left no file lock beside the lockfile: it is in the
		// user's repository.
		if _, err := os.Stat(filepath.Join(dir, ".nexus.lock.hcl.lock")); !os.IsNotExist(err) {
			t.Errorf("the accept left .nexus.lock.hcl.lock beside the lockfile (%v)", err)
		}
		// The audit log says who accepted what, and why.
		log, err := os.ReadFile(auditA)
		if err != nil {
			t.Fatal(err)
		}
		var rec string
		for _, l := range strings.Split(string(log), "\n") {
			if strings.Contains(l, `"console/lockfile/accept"`) {
				rec = l
			}
		}
		if !strings.Contains(rec, "admin token 1") || !strings.Contains(rec, "reviewed in change 7") || !strings.Contains(rec, `"tool":"echo"`) {
			t.Errorf("the accept's audit record: %q", rec)
		}
		for _, s := range []*served{a, b} {
			for _, secret := range []string{adminToken, viewerToken, agentToken} {
				if strings.Contains(s.stderr.String(), secret) {
					t.Errorf("a replica's log shows a secret")
				}
			}
		}
	})
}
