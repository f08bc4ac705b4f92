package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
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
	// plugintest.Filter builds first; the deadline starts after the build,
	// since a cold build on a busy machine can take longer than the calls
	// are given.
	san, err := plugintest.Filter(t, ".", "sanitizer", map[string]any{"pattern": `sk-[A-Za-z0-9]{8,}`})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := san.Handle(ctx, &event.Event{ABI: event.ABI, Phase: event.PhaseResponse, Method: "tools/call",
		Result: json.RawMessage(`{"content":[{"type":"text","text":"key: sk-abcdef123456"}]}`)})
	if err != nil || d.Action != event.Modify || !strings.Contains(string(d.Result), "key: [redacted]") {
		t.Fatalf("sanitize: %+v %v", d, err)
	}
	_, err = plugintest.Filter(t, ".", "policy", map[string]any{})
	var ce *plugintest.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "deny") {
		t.Fatalf("missing deny: %v", err)
	}
}
