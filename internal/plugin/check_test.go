package plugin

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// A sanitizer link made by name (Plugin.Sanitizer, as the host's chain
// and the CLI's filter verbs make them) changes what it is meant to and
// passes the rest unchanged; a config its kind refuses fails at once.
func TestSanitizerLink(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	p := openGood(t, m, "guard")
	l, err := p.Sanitizer(ctx, "redact", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Kind() != pb.KindSanitizer || l.Name() != "redact" {
		t.Errorf("link %q of kind %q", l.Name(), l.Kind())
	}
	result := func(text string) *event.Event {
		e := toolEvent("read")
		e.Phase = event.PhaseResponse
		e.Result = json.RawMessage(`{"content":[{"type":"text","text":"` + text + `"}]}`)
		return e
	}
	d, err := l.Handle(ctx, result("the secret is 42"))
	if err != nil || d.Action != event.Modify || !strings.Contains(string(d.Result), "the [redacted] is 42") || strings.Contains(string(d.Result), "secret") {
		t.Fatalf("a result with a secret: %+v %v", d, err)
	}
	d, err = l.Handle(ctx, result("nothing to hide"))
	if err != nil || d.Action != event.Allow || len(d.Result) != 0 {
		t.Fatalf("a clean result: %+v %v", d, err)
	}
	// The same link keeps working call after call (one configured
	// instance, not one per call).
	for range 20 {
		if d, err := l.Handle(ctx, result("secret")); err != nil || d.Action != event.Modify {
			t.Fatalf("a later call: %+v %v", d, err)
		}
	}
	// A policy config the plugin's schema refuses is a ConfigError naming
	// the filter and the offending field, before any instance is made.
	_, err = p.Policy(ctx, "bad", json.RawMessage(`{"deny_tools": "rm"}`))
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), `filter "bad"`) || !strings.Contains(err.Error(), "/deny_tools") {
		t.Fatalf("a refused config: %v", err)
	}
}

// Manager.Check (nexus config validate) starts each plugin in use, checks
// every config that names it against the plugin's schemas and counts the
// good ones; a plugin that cannot start is one error; unused plugin
// blocks and disabled servers are left alone.
func TestManagerCheck(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	good := pinned(t, "guard", testPlugin(t, "good"))
	tampered := pinned(t, "tampered", testPlugin(t, "good"))
	tampered.SHA256 = strings.Repeat("0", 64)
	// Never started: a path where nothing is would fail if it were.
	unused := &config.Plugin{Name: "unused", Path: "/nonexistent/plugin", SHA256: strings.Repeat("1", 64)}
	at := func(line int) diag.Source { return diag.Source{File: "/work/nexus.hcl", Layer: "project", Line: line} }
	cfg := &config.Config{
		Plugins: []*config.Plugin{good, tampered, unused},
		Filters: []*config.Filter{
			{Name: "no-delete", Kind: "policy", Plugin: "guard", Config: map[string]any{"deny_tools": []any{"delete_repo"}}, Source: at(10)},
			{Name: "redact", Kind: "sanitizer", Plugin: "guard", Source: at(14)},
			{Name: "typo", Kind: "policy", Plugin: "guard", Config: map[string]any{"deny_tool": []any{"x"}}, Source: at(18)},
			{Name: "other", Kind: "policy", Plugin: "tampered", Source: at(22)},
		},
		Servers: []*config.Server{
			{Name: "piped", Type: config.TypePlugin, Enabled: true, Plugin: &config.PluginTransport{Name: "guard"}, Source: at(30)},
			{Name: "wrong", Type: config.TypePlugin, Enabled: true, Plugin: &config.PluginTransport{Name: "guard", Config: map[string]any{"command": "not-a-list"}}, Source: at(34)},
			{Name: "off", Type: config.TypePlugin, Enabled: false, Plugin: &config.PluginTransport{Name: "guard", Config: map[string]any{"command": 5}}, Source: at(38)},
		},
	}
	got := m.Check(ctx, cfg)
	if len(got) != 2 || got[0].Plugin != "guard" || got[1].Plugin != "tampered" {
		t.Fatalf("checked %+v, want guard and tampered (unused is not in use)", got)
	}
	g := got[0]
	if g.Configs != 3 || len(g.Errs) != 2 {
		t.Fatalf("guard: %d good configs and errors %v; want 3 good (no-delete, redact, piped) and 2 bad (typo, wrong)", g.Configs, g.Errs)
	}
	for i, want := range []string{"line 18", "line 34"} {
		if !strings.Contains(Explain(g.Errs[i]).Error(), want) {
			t.Errorf("error %d does not point at its config (%s): %v", i, want, g.Errs[i])
		}
	}
	if !strings.Contains(g.Errs[0].Error(), "deny_tool") {
		t.Errorf("the typo is not named:\n%v", g.Errs[0])
	}
	tp := got[1]
	var le *LoadError
	if tp.Configs != 0 || len(tp.Errs) != 1 || !errors.As(tp.Errs[0], &le) || le.Kind != LoadChecksumMismatch {
		t.Fatalf("tampered: %d configs, errors %v; want one checksum mismatch", tp.Configs, tp.Errs)
	}
	m.mu.Lock()
	_, started := m.plugins["unused"]
	m.mu.Unlock()
	if started {
		t.Error("an unused plugin block was started")
	}
}
