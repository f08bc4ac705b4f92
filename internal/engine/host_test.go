package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/sdk/event"
)

var echoSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}`)

func echoTool(name string) mcp.Tool { return mcp.Tool{Name: name, InputSchema: echoSchema} }

var hi = map[string]string{"message": "hi"}

func TestPermissionLevels(t *testing.T) {
	w := newWorld()
	w.server("a", echoTool("echo"))
	w.server("b", echoTool("echo"))
	conf := &confirmer{answers: []policy.Answer{policy.Yes, policy.Always, policy.No}}
	h := w.host(t, `{"y": {"permission": "yolo"}, "t": {"permission": "trusted"}, "s": {"permission": "sandboxed"}}`,
		engine.Options{Confirm: conf})

	t.Run("yolo never asks", func(t *testing.T) {
		for _, name := range []string{"a.echo", "mcp_a_echo", "b.echo", "mcp_b_echo"} {
			ok(t, h, "y", name, hi)
		}
		if conf.times() != 0 {
			t.Fatalf("a yolo agent was asked %d times", conf.times())
		}
	})

	t.Run("trusted asks once per server", func(t *testing.T) {
		ok(t, h, "t", "a.echo", hi) // yes: this call only
		if conf.times() != 1 {
			t.Fatalf("asked %d times, want 1", conf.times())
		}
		r := conf.asked[0]
		if r.Agent != "t" || r.Server != "a" || r.Tool != "echo" || r.Method != mcp.MethodToolsCall || !strings.Contains(string(r.Arguments), `"hi"`) {
			t.Errorf("the person was asked about %+v", r)
		}
		ok(t, h, "t", "a.echo", hi) // asked again: always
		ok(t, h, "t", "mcp_a_echo", hi)
		ok(t, h, "t", "a.echo", hi)
		if conf.times() != 2 {
			t.Fatalf("asked %d times after 'always', want 2", conf.times())
		}
		before := w.calls.count("b", "")
		_, err := h.CallTool(ctx, "t", "b.echo", hi, nil) // another server: asked, says no
		denied(t, err, "permission", "declined")
		if conf.times() != 3 {
			t.Fatalf("a new server was not asked about (%d)", conf.times())
		}
		_, err = h.CallTool(ctx, "t", "b.echo", hi, nil) // nobody to ask
		denied(t, err, "permission", "--yes", "yolo")
		if w.calls.count("b", "") != before {
			t.Fatal("a call the person declined reached the server")
		}
	})

	t.Run("sandboxed has no access", func(t *testing.T) {
		for _, name := range []string{"a.echo", "mcp_a_echo"} {
			_, err := h.CallTool(ctx, "s", name, hi, nil)
			denied(t, err, "permission", "sandboxed", `"trusted"`)
		}
		_, err := h.Tools(ctx, "s")
		denied(t, err, "permission", "sandboxed")
		_, err = h.ReadResource(ctx, "s", "a", "file:///x")
		denied(t, err, "permission", "sandboxed")
	})

	t.Run("no agent is denied with how to grant", func(t *testing.T) {
		for _, name := range []string{"a.echo", "mcp_a_echo"} {
			_, err := h.CallTool(ctx, "ghost", name, hi, nil)
			denied(t, err, "permission", `agent "ghost" { permission = "trusted" }`)
		}
		_, err := h.Tools(ctx, "ghost")
		denied(t, err, "permission", "grant")
	})

	if conf.times() != 4 {
		t.Errorf("sandboxed or unknown agents reached the confirmer (%d asks)", conf.times())
	}
	if n := w.calls.count("a", "") + w.calls.count("b", ""); n != 8 {
		t.Errorf("%d calls reached the servers, want the 8 allowed ones", n)
	}
}

func TestTrustedWithoutConfirmer(t *testing.T) {
	w := newWorld()
	w.server("a", echoTool("echo"))
	h := w.host(t, "", engine.Options{}) // the built-in "cli" agent is trusted
	_, err := h.CallTool(ctx, engine.CLIAgent, "a.echo", hi, nil)
	denied(t, err, "permission", "--yes")
	if w.calls.count("a", "") != 0 {
		t.Fatal("an unconfirmed call reached the server")
	}
	// Listing asks nobody.
	tools, err := h.Tools(ctx, engine.CLIAgent)
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_a_echo")
	h = w.host(t, "", engine.Options{Confirm: policy.AllowAll{}})
	ok(t, h, engine.CLIAgent, "a.echo", hi)
}

func TestAllowDenyRules(t *testing.T) {
	w := newWorld()
	w.server("a", echoTool("echo"), echoTool("list"), echoTool("danger_drop"))
	w.server("b", echoTool("echo"))
	w.server("c", echoTool("read_x"), echoTool("write_x"))
	h := w.host(t, `{"r": {"permission": "yolo", "servers": ["a", "c"], "allow": ["a.*", "c.read*"], "deny": ["a.danger*"]}}`, engine.Options{})

	tools, err := h.Tools(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_a_echo", "mcp_a_list", "mcp_c_read_x")

	// Each denial names the rule that decided.
	for name, rule := range map[string]string{
		"a.danger_drop": `its deny rule "a.danger*" matches it`, "mcp_a_danger_drop": `its deny rule "a.danger*" matches it`,
		"c.write_x": `no pattern of its allow list ["a.*" "c.read*"] matches it`, "mcp_c_write_x": `no pattern of its allow list`,
	} {
		_, err := h.CallTool(ctx, "r", name, hi, nil)
		denied(t, err, "rules", rule)
	}
	_, err = h.CallTool(ctx, "r", "b.echo", hi, nil)
	denied(t, err, "rules", `server "b"`)
	for _, name := range []string{"a.echo", "mcp_a_list", "c.read_x"} {
		ok(t, h, "r", name, hi)
	}
	if w.calls.count("a", "danger_drop")+w.calls.count("c", "write_x")+w.calls.count("b", "") != 0 {
		t.Fatal("a call the rules forbid reached a server")
	}
}

func TestFilters(t *testing.T) {
	w := newWorld()
	w.server("s", echoTool("echo"), echoTool("rm"), echoTool("hidden"))
	var seen []*event.Event
	links := []policy.Entry{
		{Kind: policy.KindPolicy, Link: policy.Func{N: "no-rm", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodToolsCall {
				seen = append(seen, e)
			}
			if e.Method == mcp.MethodToolsCall && e.Tool.Name == "rm" {
				return event.Decision{Action: event.Deny, Reason: "rm is off limits"}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
		{Kind: policy.KindPolicy, Link: policy.Func{N: "redact", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method != mcp.MethodToolsCall || !strings.Contains(string(e.Params), "secret") {
				return event.Decision{Action: event.Allow}, nil
			}
			return event.Decision{Action: event.Modify, Params: json.RawMessage(strings.ReplaceAll(string(e.Params), "secret", "[redacted]"))}, nil
		}}},
		{Kind: policy.KindPolicy, Link: policy.Func{N: "hide", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodToolsList && e.Tool != nil && e.Tool.Name == "hidden" {
				return event.Decision{Action: event.Deny}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
		{Kind: policy.KindPolicy, Link: policy.Func{N: "break-args", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			if e.Method == mcp.MethodToolsCall && strings.Contains(string(e.Params), "break me") {
				return event.Decision{Action: event.Modify, Params: json.RawMessage(`{"name":"echo","arguments":{"message":42}}`)}, nil
			}
			return event.Decision{Action: event.Allow}, nil
		}}},
		{Kind: policy.KindSanitizer, Link: policy.Func{N: "stamp", F: func(ctx context.Context, e *event.Event) (event.Decision, error) {
			var r mcp.CallToolResult
			if err := json.Unmarshal(e.Result, &r); err != nil || len(r.Content) == 0 {
				return event.Decision{Action: event.Allow}, nil
			}
			r.Content[0].Text = "sanitized: " + r.Content[0].Text
			b, _ := json.Marshal(&r)
			return event.Decision{Action: event.Modify, Result: b}, nil
		}}},
	}
	h := w.host(t, yolo, engine.Options{Links: links})

	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_s_echo", "mcp_s_rm")

	_, err = h.CallTool(ctx, "y", "mcp_s_rm", hi, nil)
	denied(t, err, "no-rm", "rm is off limits")
	if w.calls.count("s", "rm") != 0 {
		t.Fatal("a denied call reached the server")
	}

	got := ok(t, h, "y", "s.echo", map[string]string{"message": "my secret"})
	if args := string(w.calls.last().Args); !strings.Contains(args, "my [redacted]") || strings.Contains(args, "secret") {
		t.Fatalf("the server saw %s, not the filter's change", args)
	}
	if !strings.HasPrefix(got, "sanitized: s.echo: ") {
		t.Fatalf("the sanitizer did not change the result: %q", got)
	}

	// Validation runs after the filters: what a filter produces is checked too.
	before := w.calls.count("s", "")
	_, err = h.CallTool(ctx, "y", "s.echo", map[string]string{"message": "break me"}, nil)
	var se *registry.SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("arguments a filter broke were not validated: %v", err)
	}
	if w.calls.count("s", "") != before {
		t.Fatal("invalid arguments reached the server")
	}

	e := seen[len(seen)-1]
	if e.Agent.ID != "y" || e.Agent.Permission != event.Yolo || e.Server.Name != "s" || e.Server.Info == nil || e.Server.Info.Name != "srv-s" {
		t.Errorf("filter event %+v (server %+v)", e, e.Server)
	}
}

func TestSchemaValidation(t *testing.T) {
	w := newWorld()
	var logs logBuffer
	w.server("v",
		mcp.Tool{Name: "typed", InputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer","minimum":1},"tags":{"type":"array","items":{"type":"string"}}},"required":["count"],"additionalProperties":false}`)},
		mcp.Tool{Name: "loose", InputSchema: json.RawMessage(`{"type": 12, "properties": "nope"}`)},
		mcp.Tool{Name: "ref", InputSchema: json.RawMessage(`{"$ref": "https://example.com/schema.json"}`)},
	)
	s := w.servers["v"]
	s.AddTool(mcp.Tool{Name: "sum", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("done")
			if strings.Contains(string(req.Arguments), "bad") {
				res.StructuredContent = json.RawMessage(`{"sum":"not a number"}`)
			} else {
				res.StructuredContent = json.RawMessage(`{"sum":3}`)
			}
			return res, nil
		})
	h := w.host(t, yolo, engine.Options{Logger: logs.logger()})

	for _, tc := range []struct {
		args  string
		parts []string
	}{
		{`{"count": "three"}`, []string{"/count", "integer"}},
		{`{}`, []string{"missing", "count"}},
		{`{"count": 0}`, []string{"/count", "minimum"}},
		{`{"count": 1, "tags": [1]}`, []string{"/tags/0", "string"}},
		{`{"count": 1, "extra": true}`, []string{"extra", "additional"}},
	} {
		_, err := h.CallTool(ctx, "y", "v.typed", json.RawMessage(tc.args), nil)
		var se *registry.SchemaError
		if !errors.As(err, &se) || se.What != "arguments" || se.Server != "v" || se.Tool != "typed" {
			t.Fatalf("%s: want a SchemaError for the arguments, got %v", tc.args, err)
		}
		for _, p := range tc.parts {
			if !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %q does not name %q", tc.args, err, p)
			}
		}
	}
	if n := w.calls.count("v", "typed"); n != 0 {
		t.Fatalf("%d invalid calls reached the server", n)
	}
	ok(t, h, "y", "v.typed", json.RawMessage(`{"count": 2, "tags": ["a"]}`))
	if w.calls.count("v", "typed") != 1 {
		t.Fatal("the valid call did not reach the server")
	}

	// structuredContent is checked against outputSchema.
	ok(t, h, "y", "v.sum", nil)
	_, err := h.CallTool(ctx, "y", "v.sum", map[string]string{"x": "bad"}, nil)
	var se *registry.SchemaError
	if !errors.As(err, &se) || se.What != "structured output" || !strings.Contains(err.Error(), "/sum") {
		t.Fatalf("want a SchemaError for the structured output, got %v", err)
	}

	// A schema that does not compile leaves the tool usable, with a warning.
	for _, name := range []string{"v.loose", "v.ref"} {
		ok(t, h, "y", name, json.RawMessage(`{"anything": [1, 2]}`))
		ok(t, h, "y", name, nil)
	}
	log := logs.String()
	for _, want := range []string{"loose", "ref", "schema"} {
		if !strings.Contains(log, want) {
			t.Errorf("no warning about the broken schema naming %q:\n%s", want, log)
		}
	}
	// typed, loose, ref and sum's inputs, sum's output: compiled once each.
	if n := h.SchemaCacheLen(); n != 5 {
		t.Errorf("%d schemas compiled for 5 distinct ones", n)
	}
	if n := strings.Count(log, "tool=loose"); n != 1 {
		t.Errorf("the warning about v.loose was logged %d times, want once:\n%s", n, log)
	}
}

var allowedName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestNameCollisions: server a's tool b_c and server a_b's tool c would
// both be mcp_a_b_c. Both stay callable, by different exposed names and by
// server.tool, and every agent sees the same names whichever servers it
// sees: a.b_c carries a hash, a_b.c keeps its plain name.
func TestNameCollisions(t *testing.T) {
	w := newWorld()
	w.server("a", echoTool("b_c"))
	w.server("a_b", echoTool("c"))
	h := w.host(t, `{"y": {"permission": "yolo"}, "one": {"permission": "yolo", "servers": ["a"]}}`, engine.Options{})
	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name == tools[1].Name {
		t.Fatalf("tools %v", toolNames(tools))
	}
	byRef := map[string]string{}
	for _, tool := range tools {
		byRef[tool.Server+"."+tool.Tool.Name] = tool.Name
		if !allowedName.MatchString(tool.Name) {
			t.Errorf("name %q", tool.Name)
		}
		want := tool.Server + "." + tool.Tool.Name + ": "
		if got := ok(t, h, "y", tool.Name, hi); !strings.HasPrefix(got, want) {
			t.Errorf("%s reached %q, want %s", tool.Name, got, want)
		}
		if got := ok(t, h, "y", tool.Server+"."+tool.Tool.Name, hi); !strings.HasPrefix(got, want) {
			t.Errorf("%s.%s reached %q", tool.Server, tool.Tool.Name, got)
		}
	}
	if byRef["a_b.c"] != "mcp_a_b_c" || !strings.HasPrefix(byRef["a.b_c"], "mcp_a_b_c_") {
		t.Errorf("names %v", byRef)
	}

	// An agent that sees only server a gets a's tool under the same name.
	tools, err = h.Tools(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, byRef["a.b_c"])
	if got := ok(t, h, "one", byRef["a.b_c"], hi); !strings.HasPrefix(got, "a.b_c: ") {
		t.Fatalf("agent one's %s reached %q", byRef["a.b_c"], got)
	}
	if _, err := h.CallTool(ctx, "one", "mcp_a_b_c", hi, nil); err == nil {
		t.Fatal("agent one reached a_b.c, a server it may not see")
	}
}

// TestOddToolNames: tool names outside the allowed set, and names too long
// for it, get valid exposed names that lead back to the exact tool.
func TestOddToolNames(t *testing.T) {
	w := newWorld()
	odd := []string{"weird.name/ü v2", "has space", strings.Repeat("long_", 30), strings.Repeat("long_", 30) + "2", "dash-ok", "emoji🙂"}
	var tools []mcp.Tool
	for _, n := range odd {
		tools = append(tools, mcp.Tool{Name: n})
	}
	w.server("odd", tools...)
	h := w.host(t, yolo, engine.Options{})
	list, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(odd) {
		t.Fatalf("%d tools, want %d", len(list), len(odd))
	}
	seen := map[string]bool{}
	for _, tool := range list {
		if !allowedName.MatchString(tool.Name) || seen[tool.Name] {
			t.Errorf("exposed name %q is invalid or repeated", tool.Name)
		}
		seen[tool.Name] = true
		before := w.calls.count("odd", tool.Tool.Name)
		ok(t, h, "y", tool.Name, nil)
		ok(t, h, "y", "odd."+tool.Tool.Name, nil)
		if w.calls.count("odd", tool.Tool.Name) != before+2 {
			t.Errorf("%s did not reach the tool %q", tool.Name, tool.Tool.Name)
		}
	}
	// Names that had to change carry a hash of the exact name.
	if !seen["mcp_odd_dash-ok"] || !seen[registry.ExposedName("odd", "has space")] || !strings.HasPrefix(registry.ExposedName("odd", "has space"), "mcp_odd_has_space_") ||
		!seen[registry.ExposedName("odd", odd[0])] || !seen[registry.ExposedName("odd", odd[2])] {
		t.Errorf("names %v", toolNames(list))
	}
}

// TestPrivateConnection: a server an agent connected privately is hidden
// from the others, in listings and calls, and costs them no error.
func TestPrivateConnection(t *testing.T) {
	w := newWorld()
	w.server("mine", echoTool("t"))
	w.server("ours", echoTool("t"))
	h := w.host(t, `{"alice": {"permission": "yolo"}, "bob": {"permission": "yolo"}}`, engine.Options{})
	if err := h.Connect(ctx, "alice", "mine", false); err != nil {
		t.Fatal(err)
	}
	tools, err := h.Tools(ctx, "bob")
	if err != nil {
		t.Fatalf("bob's listing reports alice's private server: %v", err)
	}
	wantNames(t, tools, "mcp_ours_t")
	tools, err = h.Tools(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_mine_t", "mcp_ours_t")
	for _, name := range []string{"mine.t", "mcp_mine_t"} {
		if _, err := h.CallTool(ctx, "bob", name, hi, nil); err == nil {
			t.Errorf("bob called %s on alice's private server", name)
		} else if strings.Contains(err.Error(), "configured: [mine") {
			t.Errorf("bob's error names alice's server: %v", err)
		}
	}
	if w.calls.count("mine", "") != 0 {
		t.Fatal("bob's call reached alice's server")
	}
	ok(t, h, "alice", "mcp_mine_t", hi)
}

// TestHugeDescription: a 2 MB description lists and calls like any other.
func TestHugeDescription(t *testing.T) {
	w := newWorld()
	desc := strings.Repeat("All work and no play. ", 2<<20/22)
	w.server("big", mcp.Tool{Name: "t", Description: desc}, echoTool("echo"))
	h := w.host(t, yolo, engine.Options{})
	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools {
		if tool.Tool.Name == "t" && len(tool.Description) != len(desc) {
			t.Errorf("description of %d bytes came back as %d", len(desc), len(tool.Description))
		}
	}
	ok(t, h, "y", "mcp_big_t", nil)
	ok(t, h, "y", "big.echo", hi)
}

func TestUnknownNames(t *testing.T) {
	w := newWorld()
	w.server("s", echoTool("echo"))
	h := w.host(t, yolo, engine.Options{})
	_, err := h.CallTool(ctx, "y", "s.ecko", hi, nil)
	var ut *registry.UnknownToolError
	if !errors.As(err, &ut) || !strings.Contains(err.Error(), "s.echo") {
		t.Errorf("s.ecko: %v", err)
	}
	_, err = h.CallTool(ctx, "y", "mcp_s_ecko", hi, nil)
	if !errors.As(err, &ut) || !strings.Contains(err.Error(), "s.echo") {
		t.Errorf("mcp_s_ecko: %v", err)
	}
	_, err = h.CallTool(ctx, "y", "nope.echo", hi, nil)
	var us *registry.UnknownServerError
	if !errors.As(err, &us) {
		t.Errorf("nope.echo: %v", err)
	}
	// A mistyped server is unknown, with a suggestion, before a trusted
	// agent's first use of it would be confirmed (issue 42: it was refused
	// as an unconfirmed first use of "sx").
	trusted := w.host(t, `{"t": {"permission": "trusted"}}`, engine.Options{})
	_, err = trusted.ReadResource(ctx, "t", "sx", "file:///x")
	if !errors.As(err, &us) || !slices.Contains(us.Known, "s") {
		t.Errorf("read of server sx: %v", err)
	}
	if w.calls.count("s", "") != 0 {
		t.Error("a call to an unknown tool reached the server")
	}
}

// TestListChangedInProcess: tools a connected in-process server adds or
// removes (it sends list_changed) show up in Tools and resolve, or stop
// resolving, by exposed name.
func TestListChangedInProcess(t *testing.T) {
	w := newWorld()
	s := w.server("live", echoTool("t"))
	h := w.host(t, yolo, engine.Options{})
	tools, err := h.Tools(ctx, "y")
	if err != nil {
		t.Fatal(err)
	}
	wantNames(t, tools, "mcp_live_t")
	ok(t, h, "y", "mcp_live_t", hi)

	s.AddTool(echoTool("t2"), w.handler("live"))
	waitFor(t, "the new tool is listed", func() bool {
		tools, _ := h.Tools(ctx, "y")
		return len(tools) == 2
	})
	if got := ok(t, h, "y", "mcp_live_t2", hi); !strings.HasPrefix(got, "live.t2: ") {
		t.Fatalf("new tool answered %q", got)
	}

	s.RemoveTools("t2")
	waitFor(t, "the removed tool is gone", func() bool {
		tools, _ := h.Tools(ctx, "y")
		return len(tools) == 1
	})
	_, err = h.CallTool(ctx, "y", "mcp_live_t2", hi, nil)
	var ut *registry.UnknownToolError
	if !errors.As(err, &ut) {
		t.Fatalf("a removed tool still resolves: %v", err)
	}
	if w.dials["live"] != 1 {
		t.Errorf("%d connections for one live server", w.dials["live"])
	}
}
