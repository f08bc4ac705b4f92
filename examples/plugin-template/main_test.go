package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/config"
	hostplugin "github.com/nexus-mcp/nexus/host/plugin"
	"github.com/nexus-mcp/nexus/host/plugin/plugintest"
	"github.com/nexus-mcp/nexus/sdk/event"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// The logic, in process: fast tests of what the plugin decides.
func TestDenyTools(t *testing.T) {
	d, err := denyTools{}.NewPolicy(context.Background(), json.RawMessage(`{"deny": ["github.delete_*"]}`))
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := d.Decide(context.Background(), &event.Event{Server: event.Server{Name: "github"}, Tool: &event.Tool{Name: "delete_repo"}})
	if dec.Action != event.Deny {
		t.Errorf("delete_repo: %+v", dec)
	}
	dec, _ = d.Decide(context.Background(), &event.Event{Server: event.Server{Name: "github"}, Tool: &event.Tool{Name: "list_repos"}})
	if dec.Action != event.Allow {
		t.Errorf("list_repos: %+v", dec)
	}
}

// The real binary through the host, as Nexus runs it.
func TestThroughHost(t *testing.T) {
	m := plugintest.Manager(t)
	// The deadline starts after the build: a cold build on a busy
	// machine can take longer than the calls are given.
	cfg := &config.Config{Plugins: []*config.Plugin{plugintest.Pinned(t, "template", plugintest.Build(t, "."))}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	san, err := m.Filter(ctx, cfg, &config.Filter{Name: "keys", Kind: "sanitizer", Plugin: "template",
		Config: map[string]any{"pattern": `sk-[A-Za-z0-9]{8,}`}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := san.Handle(ctx, &event.Event{ABI: event.ABI, Phase: event.PhaseResponse, Method: "tools/call",
		Result: json.RawMessage(`{"content":[{"type":"text","text":"key: sk-abcdef123456"}]}`)})
	if err != nil || d.Action != event.Modify || !strings.Contains(string(d.Result), "key: [redacted]") {
		t.Fatalf("sanitize: %+v %v", d, err)
	}
	_, err = m.Filter(ctx, cfg, &config.Filter{Name: "bad", Kind: "policy", Plugin: "template", Config: map[string]any{}})
	var ce *hostplugin.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "deny") {
		t.Fatalf("missing deny: %v", err)
	}
}
