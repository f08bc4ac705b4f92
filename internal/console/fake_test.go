package console_test

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/registry"
)

// fakeServers are servers in whatever state a test needs, their errors
// reported with the problem text the test gives.
type fakeServers struct {
	list    []registry.Status
	problem string
	fix     []string
}

func (f *fakeServers) Servers() []registry.Status { return f.list }
func (f *fakeServers) Explain(server string, err error) error {
	return &diag.Report{Title: "MCP Server Launch Failed", Server: server, Problem: f.problem, Fix: f.fix, Cause: err}
}
func (f *fakeServers) ExposedName(server, tool string) string { return "mcp_" + server + "_" + tool }

type fakeSessions struct{ list []gateway.SessionInfo }

func (f *fakeSessions) List() []gateway.SessionInfo { return f.list }
func (f *fakeSessions) End(string) bool             { return false }

// servers makes n servers, every third failed with an error.
func servers(n int) []registry.Status {
	out := make([]registry.Status, n)
	for i := range out {
		s := registry.Status{Config: &config.Server{Name: fmt.Sprintf("server%04d", i), Type: config.TypeStdio, Enabled: true}}
		switch i % 3 {
		case 0:
			s.Connected, s.Tools, s.Era, s.Version = true, 12, "legacy", "2025-11-25"
		case 1:
			s.Connected, s.Tools, s.Era, s.Version = true, 3, "modern", "2026-07-28"
		default:
			s.Err = errors.New("exit status 1")
		}
		out[i] = s
	}
	return out
}

func sessions(n int) []gateway.SessionInfo {
	out := make([]gateway.SessionInfo, n)
	for i := range out {
		out[i] = gateway.SessionInfo{ID: fmt.Sprintf("%016x", i), Agent: fmt.Sprintf("agent%02d", i%50), Version: "2025-11-25", Client: "claude-code 2.1"}
	}
	return out
}

// fakeConsole serves a console over the fakes on a loopback test server.
func fakeConsole(t testing.TB, srv *fakeServers, ss *fakeSessions) (*console.Console, *audit.Feed, string) {
	feed := audit.NewFeed()
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}, ReadOnly: []string{viewerToken}},
		Servers: srv, Sessions: ss, Feed: feed})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(k)
	t.Cleanup(func() { ts.Close(); k.Close() })
	return k, feed, ts.URL
}

// hostile is a definition's text as a rug pull would write it: markup,
// ANSI escapes, bidi overrides.
const hostile = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">\x1b[31mred\x1b[0m \u202Eevil\u202C\u200b"

// TestInert: untrusted text renders inert on every page that shows it
// (an error's problem and fix on the overview, a decision's name and
// reason live and in its trace): no script runs, no markup is made, and
// escapes and bidi controls show as their codes. A 1 MB text is cut, so
// the page stays small and loads.
func TestInert(t *testing.T) {
	srv := &fakeServers{list: servers(3), problem: hostile + strings.Repeat("x", 1<<20), fix: []string{hostile}}
	_, feed, base := fakeConsole(t, srv, &fakeSessions{list: sessions(3)})
	browser := newBrowser(t)
	shots := artifacts(t)
	login(t, browser, base, adminToken)
	check := func(page string) {
		t.Helper()
		if p := eval[bool](t, browser, `window.pwned !== undefined`); p {
			t.Errorf("%s: untrusted text ran a script", page)
		}
		if n := eval[int](t, browser, `document.querySelectorAll("main img, main script").length`); n != 0 {
			t.Errorf("%s: untrusted text made %d elements", page, n)
		}
		text := eval[string](t, browser, `document.querySelector("main").innerText`)
		for _, want := range []string{"<script>window.pwned=1</script>", "⟨ESC⟩[31mred", "⟨U+202E⟩evil⟨U+202C⟩⟨U+200B⟩"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the text does not show %q", page, want)
			}
		}
		if strings.ContainsAny(text, "\x1b\u202e\u202c\u200b") {
			t.Errorf("%s: a control or bidi character reached the page as itself", page)
		}
		size := eval[int](t, browser, `document.documentElement.outerHTML.length`)
		if size > 256<<10 {
			t.Errorf("%s: %d bytes of page for a 1 MB text: it is not cut", page, size)
		}
	}
	do(t, browser, "overview", reload())
	check("overview")
	shot(t, browser, shots, "overview-hostile")
	axe(t, browser, "overview (hostile)")

	do(t, browser, "decisions", navigate(base+"/decisions"), until(`document.getElementById("status").textContent.startsWith("Live")`))
	feed.Publish(audit.Decision{Record: audit.Record{Time: time.Now(), Agent: "claude", Method: "tools/call", Server: "server0000", Tool: hostile,
		Decision: "deny", Link: "rules", Source: "nexus.hcl:12", Reason: hostile}})
	do(t, browser, "the hostile decision", waitRow())
	check("decisions")
	do(t, browser, "its trace", clickRow())
	check("explain")
	shot(t, browser, shots, "explain-hostile")
	axe(t, browser, "explain (hostile)")
}

// TestStreamUnderLoad: 1,000 decisions a second for a while, into a page
// whose CPU is throttled: the stream stays live (a decision made after
// the flood shows), the page keeps at most its 200 rows, and what it
// cannot keep up with is dropped, and counted, rather than queued.
func TestStreamUnderLoad(t *testing.T) {
	_, feed, base := fakeConsole(t, &fakeServers{list: servers(1)}, &fakeSessions{})
	browser := newBrowser(t)
	login(t, browser, base, adminToken)
	do(t, browser, "decisions", navigate(base+"/decisions"), until(`document.getElementById("status").textContent.startsWith("Live")`),
		throttle(8))
	stop := make(chan struct{})
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; n < 300; n++ { // 3 s at 1,000/s, in bursts of 10
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for range 10 {
				feed.Publish(audit.Decision{Record: audit.Record{Time: time.Now(), Agent: "flood", Method: "tools/call", Server: "s", Tool: "t", Decision: "allow"}})
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-flooded })
	<-flooded
	feed.Publish(audit.Decision{Record: audit.Record{Time: time.Now(), Agent: "after", Method: "tools/call", Server: "s", Tool: "last", Decision: "deny", Link: "rules"}})
	do(t, browser, "the decision after the flood", until(`document.querySelector("#live tbody tr") && document.querySelector("#live tbody tr").textContent.includes("mcp_s_last")`))
	if n := eval[int](t, browser, `document.querySelectorAll("#live tbody tr").length`); n > 200 {
		t.Errorf("the page holds %d rows; it keeps 200", n)
	}
	status := eval[string](t, browser, `document.getElementById("status").textContent`)
	t.Logf("after 3,000 decisions: %s", status)
	var shown, there, here int
	if _, err := fmt.Sscanf(status, "Live: %d decision(s) shown; dropped: %d by the gateway, %d by this page.", &shown, &there, &here); err != nil {
		t.Fatalf("status %q: %v", status, err)
	}
	// Every decision is either shown or counted as dropped, where it was.
	if shown+there+here != 3001 {
		t.Errorf("status %q accounts for %d decisions; 3,001 were made", status, shown+there+here)
	}
}
