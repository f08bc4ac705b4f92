package engine_test

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/rawfake"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// TestCallToolWire: CallOptions.Wire hands back the result as the server
// sent it when nothing on the way changed it; when the built-in
// sanitizer, a filter or the output cap changes the result, or the
// server's bytes say more than the result holds, Wire is nil. A sanitizer
// in the chain reads the result as Nexus encodes it whatever the server's
// spelling: a filter matching bytes is not escaped by "\u0061" for "a".
func TestCallToolWire(t *testing.T) {
	var mu sync.Mutex
	var seen []json.RawMessage // what the sanitizer read, call by call
	stamp := stampLink(func(result json.RawMessage) {
		mu.Lock()
		seen = append(seen, result)
		mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, chain := range []bool{false, true} {
		var links []policy.Entry
		if chain {
			links = []policy.Entry{stamp}
		}
		h := rawHost(ctx, t, links...)
		for _, c := range []struct {
			name, raw, text string
			passed          bool
		}{
			{"as sent", `{ "isError":false, "content":[{"text":"caf\u00e9","type":"text"}] }`, "café", true},
			{"terminal escapes stripped", `{"content":[{"type":"text","text":"\u001b[31mred"}]}`, "red", false},
			{"a member dropped", `{"content":[{"type":"text","text":"a"}],"extra":1}`, "a", false},
			{"a key given twice", `{"content":[{"type":"text","text":"first"}],"content":[{"type":"text","text":"second"}]}`, "second", false},
			{"changed by a filter", `{"content":[{"type":"text","text":"stamp me"}]}`, "stamped", !chain},
			{"escaped for a filter", `{"content":[{"type":"text","text":"st\u0061mp me"}]}`, "stamped", !chain},
		} {
			mu.Lock()
			seen = nil
			mu.Unlock()
			wire := json.RawMessage("stale")
			args, _ := json.Marshal(map[string]string{"result": c.raw})
			res, err := h.CallTool(ctx, "a", "raw.reply", json.RawMessage(args), &engine.CallOptions{Wire: &wire})
			if err != nil {
				t.Fatalf("chain %v, %s: %v", chain, c.name, err)
			}
			if !chain {
				c.text = strings.Replace(c.text, "stamped", "stamp me", 1)
			}
			if len(res.Content) != 1 || res.Content[0].Text != c.text {
				t.Fatalf("chain %v, %s: result %+v, want text %q", chain, c.name, res, c.text)
			}
			switch {
			case c.passed && string(wire) != c.raw:
				t.Fatalf("chain %v, %s: Wire %q, want the server's bytes %q", chain, c.name, wire, c.raw)
			case !c.passed && wire != nil:
				t.Fatalf("chain %v, %s: Wire %q, want nil", chain, c.name, wire)
			}
			if !chain {
				continue
			}
			mu.Lock()
			got := seen
			mu.Unlock()
			if len(got) != 1 {
				t.Fatalf("%s: the sanitizer ran %d times", c.name, len(got))
			}
			var read mcp.CallToolResult
			if err := json.Unmarshal(got[0], &read); err != nil {
				t.Fatal(err)
			}
			if again, _ := read.MarshalJSON(); string(got[0]) != string(again) {
				t.Fatalf("%s: the sanitizer read %s, not Nexus's encoding %s (the server sent %s)", c.name, got[0], again, c.raw)
			}
		}
	}
}

// TestReadResourceWire: ReadResourceWith's Wire is a resource as the
// server sent it when nothing changed it, nil when the built-in sanitizer
// or a filter changed it or the bytes say more than the result holds.
func TestReadResourceWire(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := rawHost(ctx, t, stampLink(nil))
	for _, c := range []struct {
		name, raw, text string
		passed          bool
	}{
		{"as sent", `{ "contents":[{"text":"caf\u00e9","uri":"file:///a"}] }`, "café", true},
		{"terminal escapes stripped", `{"contents":[{"uri":"file:///a","text":"\u001b[31mred"}]}`, "red", false},
		{"a key given twice", `{"contents":[{"uri":"file:///a","text":"first","text":"second"}]}`, "second", false},
		{"changed by a filter", `{"contents":[{"uri":"file:///a","text":"stamp me"}]}`, "stamped", false},
	} {
		wire := json.RawMessage("stale")
		res, err := h.ReadResourceWith(ctx, "a", "raw", "raw:"+url.QueryEscape(c.raw), &engine.CallOptions{Wire: &wire})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].Text != c.text {
			t.Fatalf("%s: result %+v, want text %q", c.name, res, c.text)
		}
		switch {
		case c.passed && string(wire) != c.raw:
			t.Fatalf("%s: Wire %q, want the server's bytes %q", c.name, wire, c.raw)
		case !c.passed && wire != nil:
			t.Fatalf("%s: Wire %q, want nil", c.name, wire)
		}
	}
}

// rawHost is a host whose one server, "raw", is a rawfake (it lives as
// long as ctx, not the dial), for agent "a" (yolo), with links.
func rawHost(ctx context.Context, t *testing.T, links ...policy.Entry) *engine.Host {
	t.Helper()
	cfg, err := config.Parse([]byte(`{"mcpServers": {"raw": {"command": "rawfake"}}, "agents": {"a": {"permission": "yolo"}}}`), diag.Source{File: "test.json"})
	if err != nil {
		t.Fatal(err)
	}
	h := engine.New(cfg, engine.Options{Links: links,
		Transport: func(context.Context, *config.Server) (mcp.Conn, error) { return rawfake.Pipe(ctx), nil }})
	t.Cleanup(func() { h.Close() })
	return h
}

// stampLink is a sanitizer that turns "stamp me" into "stamped"; read,
// when not nil, gets every result it reads.
func stampLink(read func(json.RawMessage)) policy.Entry {
	return policy.Entry{Kind: policy.KindSanitizer, Link: policy.Func{N: "stamp", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
		if read != nil {
			read(e.Result)
		}
		if strings.Contains(string(e.Result), "stamp me") {
			return event.Decision{Action: event.Modify, Result: json.RawMessage(strings.Replace(string(e.Result), "stamp me", "stamped", 1))}, nil
		}
		return event.Decision{Action: event.Allow}, nil
	}}}
}
