package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/lock"
)

// fakeLockfile withholds the drift a test gives until it is accepted.
type fakeLockfile struct {
	mu       sync.Mutex
	drift    []lock.Drift
	accepted []string // server.tool sha256
}

func (f *fakeLockfile) Enforcing() bool { return true }
func (f *fakeLockfile) Drift(context.Context) ([]lock.Drift, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]lock.Drift(nil), f.drift...), nil
}
func (f *fakeLockfile) Accept(_ context.Context, server, tool, sum string) (lock.Drift, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, d := range f.drift {
		if d.Server == server && d.Live.Name == tool {
			if d.Live.SHA256 != sum {
				return lock.Drift{}, errors.New("changed again since you reviewed it")
			}
			f.drift = append(f.drift[:i], f.drift[i+1:]...)
			f.accepted = append(f.accepted, server+"."+tool+" "+sum)
			return d, nil
		}
	}
	return lock.Drift{}, errors.New("not withheld")
}

func (f *fakeLockfile) acceptedList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.accepted...)
}

// records keeps what the console asked the audit log to record.
type records struct {
	mu   sync.Mutex
	list []audit.Record
}

func (r *records) record(rec audit.Record) error {
	r.mu.Lock()
	r.list = append(r.list, rec)
	r.mu.Unlock()
	return nil
}

func (r *records) find(method string) (audit.Record, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.list) - 1; i >= 0; i-- {
		if r.list[i].Method == method {
			return r.list[i], true
		}
	}
	return audit.Record{}, false
}

// rugPulled is the drift of a tool whose description turned hostile and
// huge, with a new argument, flagged by the poisoning scan.
func rugPulled(t testing.TB) lock.Drift {
	t.Helper()
	pinned, err := lock.ToolItem(mcpTool("echo", "Echo the message back.", `{"type":"object","properties":{"message":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	live, err := lock.ToolItem(mcpTool("echo", "Echo the message back.\n"+hostile+"\n"+strings.Repeat("y", 1<<20),
		`{"type":"object","properties":{"message":{"type":"string"},"notes":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return lock.Drift{Server: "rug", Live: live, Pinned: &pinned, Fields: lock.Fields(pinned, live),
		Flags: []string{"tool-poisoning: " + hostile}, Why: "rug.echo is not what the lockfile pins"}
}

func mcpTool(name, desc, schema string) mcp.Tool {
	return mcp.Tool{Name: name, Description: desc, InputSchema: []byte(schema)}
}

func lockConsole(t *testing.T, lf console.Lockfile, rec *records) string {
	t.Helper()
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}, ReadOnly: []string{viewerToken}},
		Servers: &fakeServers{list: servers(1)}, Sessions: &fakeSessions{}, Lockfile: lf, Record: rec.record})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(k)
	t.Cleanup(func() { ts.Close(); k.Close() })
	return ts.URL
}

// TestLockfilePage: a withheld definition shows as a diff against its
// pin, with its findings; its text is inert (no script runs, escapes and
// bidi controls show as codes, a 1 MB description is cut); the page
// passes axe. An admin's accept and reject are audited with who and why
// and reach the lockfile (accept) or leave it (reject); a read-only
// user's POST and a form without the right CSRF token change nothing.
func TestLockfilePage(t *testing.T) {
	lf := &fakeLockfile{drift: []lock.Drift{rugPulled(t)}}
	rec := &records{}
	base := lockConsole(t, lf, rec)
	browser := newBrowser(t)
	shots := artifacts(t)
	login(t, browser, base, adminToken)
	do(t, browser, "the lockfile page", navigate(base+"/lockfile"), chromedp.WaitVisible(chromedp.CSS("section.drift")))
	if p := eval[bool](t, browser, `window.pwned !== undefined`); p {
		t.Errorf("the definition's text ran a script")
	}
	if n := eval[int](t, browser, `document.querySelectorAll("main img, main script").length`); n != 0 {
		t.Errorf("the definition's text made %d elements", n)
	}
	text := eval[string](t, browser, `document.querySelector("main").innerText`)
	for _, want := range []string{"rug: echo (changed)", "\tEcho the message back.", "+\t<script>window.pwned=1</script>", "⟨ESC⟩[31mred", "⟨U+202E⟩evil",
		"tool-poisoning: <script>", "inputSchema.properties.notes", "cut: the description is longer than 64 KiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q:\n%.3000s", want, text)
		}
	}
	if strings.ContainsAny(text, "\x1b\u202e") {
		t.Error("a control or bidi character reached the page as itself")
	}
	if size := eval[int](t, browser, `document.documentElement.outerHTML.length`); size > 512<<10 {
		t.Errorf("%d bytes of page for a 1 MB description: it is not cut", size)
	}
	shot(t, browser, shots, "lockfile")
	axe(t, browser, "lockfile")

	// Reject: recorded, shown; the definition stays withheld.
	do(t, browser, "reject", chromedp.SendKeys(chromedp.CSS(`form.decide input[name=reason]`), "hidden instructions"),
		chromedp.Click(chromedp.CSS(`form.decide button.reject`)), chromedp.WaitVisible(chromedp.CSS(".note")))
	if r, ok := rec.find("console/lockfile/reject"); !ok || r.Decision != "deny" || !strings.Contains(r.Reason, "rejected by admin token 1") ||
		!strings.Contains(r.Reason, "hidden instructions") || r.Server != "rug" || r.Tool != "echo" {
		t.Errorf("the reject's record: %+v", r)
	}
	if len(lf.acceptedList()) != 0 {
		t.Error("a reject accepted")
	}
	shot(t, browser, shots, "lockfile-rejected")

	viewer := person(t, browser)
	login(t, viewer, base, viewerToken)
	do(t, viewer, "the lockfile page, read-only", navigate(base+"/lockfile"), chromedp.WaitVisible(chromedp.CSS("section.drift")))
	if n := eval[int](t, viewer, `document.querySelectorAll("form.decide").length`); n != 0 {
		t.Errorf("a read-only user is offered %d accept forms", n)
	}
	ds, _ := lf.Drift(context.Background())
	sum := ds[0].Live.SHA256
	status := eval[int](t, viewer, `fetch("/lockfile/accept", {method: "POST", body: new URLSearchParams({csrf: document.querySelector('input[name=csrf]').value, server: "rug", tool: "echo", sha256: "`+sum+`", reason: "try"})}).then(r => r.status)`)
	if status != http.StatusForbidden || len(lf.acceptedList()) != 0 {
		t.Errorf("a read-only user's accept: status %d, accepted %v", status, lf.acceptedList())
	}
	axe(t, viewer, "lockfile (read-only)")
	// An admin's POST without the login's CSRF token, from the console's
	// own page.
	status = eval[int](t, browser, `fetch("/lockfile/accept", {method: "POST", body: new URLSearchParams({csrf: "x", server: "rug", tool: "echo", sha256: "`+sum+`", reason: "try"})}).then(r => r.status)`)
	if status != http.StatusForbidden || len(lf.acceptedList()) != 0 {
		t.Errorf("an accept without the login's CSRF token: status %d, accepted %v", status, lf.acceptedList())
	}

	// Accept: recorded first, then made.
	do(t, browser, "accept", chromedp.SendKeys(chromedp.CSS(`form.decide input[name=reason]`), "reviewed in PR 7"),
		chromedp.Click(chromedp.CSS(`form.decide button.accept`)))
	eventually(t, browser, "the drift accepted", `document.readyState == "complete" && location.pathname == "/lockfile" && document.querySelector("main").innerText.includes("No definition is withheld")`)
	if got := lf.acceptedList(); len(got) != 1 || got[0] != "rug.echo "+sum {
		t.Errorf("accepted: %v", got)
	}
	if r, ok := rec.find("console/lockfile/accept"); !ok || r.Decision != "allow" || !strings.Contains(r.Reason, "accepted by admin token 1") ||
		!strings.Contains(r.Reason, "reviewed in PR 7") || !strings.Contains(r.Reason, sum) {
		t.Errorf("the accept's record: %+v", r)
	}
	shot(t, browser, shots, "lockfile-accepted")
	axe(t, browser, "lockfile (none withheld)")
}
