package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// fakeWaiting are calls waiting for their agents' input.
type fakeWaiting struct {
	mu    sync.Mutex
	list  []gateway.Continuation
	ended []string
}

func (f *fakeWaiting) Continuations() []gateway.Continuation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gateway.Continuation(nil), f.list...)
}

func (f *fakeWaiting) EndContinuation(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.list {
		if c.ID == id {
			f.list = append(f.list[:i], f.list[i+1:]...)
			f.ended = append(f.ended, id)
			return true
		}
	}
	return false
}

func (f *fakeWaiting) endedList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ended...)
}

// TestContinuationsPage: the sessions page lists the calls waiting for
// their agents' input beside the sessions, their text inert; an admin
// ends one with a reason, audited first with who and why; a read-only
// user is offered no form and the POST is refused.
func TestContinuationsPage(t *testing.T) {
	id := strings.Repeat("ab", 16)
	w := &fakeWaiting{list: []gateway.Continuation{{ID: id, Agent: "claude", Server: hostile, Round: 2, Asks: []string{"elicitation/create", "sampling/createMessage"}}}}
	rec := &records{}
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}, ReadOnly: []string{viewerToken}},
		Servers: &fakeServers{list: servers(1)}, Sessions: &fakeSessions{list: sessions(2)}, Continuations: w, Record: rec.record})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(k)
	t.Cleanup(func() { ts.Close(); k.Close() })
	base := ts.URL

	browser := newBrowser(t)
	shots := artifacts(t)
	viewer := person(t, browser)
	login(t, viewer, base, viewerToken)
	do(t, viewer, "sessions, read-only", navigate(base+"/sessions"), chromedp.WaitVisible(chromedp.CSS("#continuations")))
	row := eval[string](t, viewer, `document.querySelector("#continuations tbody tr").innerText`)
	for _, want := range []string{id, "claude", "⟨ESC⟩[31mred", "2", "elicitation/create, sampling/createMessage"} {
		if !strings.Contains(row, want) {
			t.Errorf("the waiting call's row lacks %q: %q", want, row)
		}
	}
	if p := eval[bool](t, viewer, `window.pwned !== undefined`); p {
		t.Error("a server's name ran a script")
	}
	if n := eval[int](t, viewer, `document.querySelectorAll('form[action="/sessions/continuation/end"]').length`); n != 0 {
		t.Errorf("a read-only user is offered %d forms to end a call", n)
	}
	status := eval[int](t, viewer, fmt.Sprintf(`fetch("/sessions/continuation/end", {method: "POST", body: new URLSearchParams({csrf: document.querySelector('input[name=csrf]').value, id: %q, reason: "try"})}).then(r => r.status)`, id))
	if status != http.StatusForbidden || len(w.endedList()) != 0 {
		t.Errorf("a read-only user's end: status %d, ended %v", status, w.endedList())
	}
	axe(t, viewer, "sessions with waiting calls (read-only)")

	admin := person(t, browser)
	login(t, admin, base, adminToken)
	do(t, admin, "sessions", navigate(base+"/sessions"), chromedp.WaitVisible(chromedp.CSS(`form[action="/sessions/continuation/end"]`)))
	shot(t, admin, shots, "sessions-waiting")
	axe(t, admin, "sessions with waiting calls")
	do(t, admin, "end the call", chromedp.SendKeys(chromedp.CSS(`form[action="/sessions/continuation/end"] input[name=reason]`), "stuck since the incident"),
		chromedp.Submit(chromedp.CSS(`form[action="/sessions/continuation/end"] input[name=reason]`)))
	eventually(t, admin, "the call ended", `document.readyState == "complete" && location.pathname == "/sessions" && document.querySelector("#continuations").innerText.includes("No call waits for input")`)
	if got := w.endedList(); len(got) != 1 || got[0] != id {
		t.Errorf("ended: %v", got)
	}
	r, ok := rec.find("console/continuation/end")
	if !ok || r.Call != id || r.Agent != "claude" || !strings.Contains(r.Reason, "ended by admin token 1") || !strings.Contains(r.Reason, "stuck since the incident") {
		t.Errorf("the end's audit record: %+v", r)
	}
}
