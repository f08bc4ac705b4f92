package rules

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/sdk/event"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/rules -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// at is an expression written at line 3, column 12 of nexus.hcl.
func at(text string) Expr {
	return Expr{Text: text, Source: diag.Source{File: "nexus.hcl", Line: 3, Column: 12}}
}

func call(agent, tool, args string) *event.Event {
	return &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
		Agent: event.Agent{ID: agent, Permission: event.Trusted}, Server: event.Server{Name: "github"},
		Tool: &event.Tool{Name: tool}, Params: json.RawMessage(`{"name":"` + tool + `","arguments":` + args + `}`)}
}

func mustCompile(t testing.TB, s Spec) *Rule {
	t.Helper()
	r, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeny(t *testing.T) {
	r := mustCompile(t, Spec{Name: "no-deletes-for-ci", When: at("agent.id == 'ci' && tool.name.startsWith('delete_')"), Action: Deny, Reason: "CI may not delete"})
	ctx := context.Background()
	for _, c := range []struct {
		e    *event.Event
		want string
	}{
		{call("ci", "delete_repo", `{}`), event.Deny},
		{call("ci", "list_repos", `{}`), event.Allow},
		{call("claude", "delete_repo", `{}`), event.Allow},
	} {
		d, err := r.Handle(ctx, c.e)
		if err != nil || d.Action != c.want {
			t.Errorf("%s %s: %+v %v", c.e.Agent.ID, c.e.Tool.Name, d, err)
		}
		if d.Action == event.Deny && d.Reason != "CI may not delete" {
			t.Errorf("reason %q", d.Reason)
		}
	}
}

func TestVariables(t *testing.T) {
	ctx := context.Background()
	ro := true
	e := call("claude", "get", `{"n": 3, "ratio": 0.5, "tags": ["a", "b"], "nested": {"k": "v"}}`)
	e.Tool.Annotations = &event.Annotations{ReadOnlyHint: &ro}
	e.Server.Info = &event.Info{Name: "gh-server", Version: "1.2.0"}
	for _, expr := range []string{
		"phase == 'request' && method == 'tools/call'",
		"agent.permission == 'trusted'",
		"server.name == 'github' && server.info.version == '1.2.0'",
		"tool.annotations.readOnlyHint && !tool.annotations.destructiveHint && tool.annotations.openWorldHint",
		"args.n == 3 && args.n > 2 && args.ratio < 1",
		"args.n > 2.5",
		"'b' in args.tags && size(args.tags) == 2",
		"args.nested.k == 'v'",
		"has(args.n) && !has(args.missing)",
		"params.name == 'get'",
		"size(result) == 0 && uri == '' && prompt == ''",
	} {
		r := mustCompile(t, Spec{Name: "v", When: at(expr), Action: Deny})
		d, err := r.Handle(ctx, e)
		if err != nil || d.Action != event.Deny {
			t.Errorf("%s: %+v %v", expr, d, err)
		}
	}
	// Hints default as MCP says: a tool with none is destructive.
	r := mustCompile(t, Spec{Name: "d", When: at("tool.annotations.destructiveHint && !tool.annotations.readOnlyHint"), Action: Deny})
	if d, _ := r.Handle(ctx, call("a", "x", `{}`)); d.Action != event.Deny {
		t.Error("a tool without hints is not destructive")
	}
	res := &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "resources/read", Server: event.Server{Name: "fs"}, Params: json.RawMessage(`{"uri":"file:///etc/passwd"}`)}
	r = mustCompile(t, Spec{Name: "u", When: at("uri.startsWith('file:///etc/') && tool.name == ''"), Action: Deny})
	if d, err := r.Handle(ctx, res); err != nil || d.Action != event.Deny {
		t.Errorf("uri: %+v %v", d, err)
	}
	pr := &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "prompts/get", Params: json.RawMessage(`{"name":"summarize"}`)}
	r = mustCompile(t, Spec{Name: "p", When: at("prompt == 'summarize'"), Action: Deny})
	if d, err := r.Handle(ctx, pr); err != nil || d.Action != event.Deny {
		t.Errorf("prompt: %+v %v", d, err)
	}
}

func TestScope(t *testing.T) {
	ctx := context.Background()
	r := mustCompile(t, Spec{Name: "mine", Agent: "ci", When: at("true"), Action: Deny})
	if d, _ := r.Handle(ctx, call("claude", "x", `{}`)); d.Action != event.Allow {
		t.Error("another agent's event was judged")
	}
	if d, _ := r.Handle(ctx, call("ci", "x", `{}`)); d.Action != event.Deny || d.Reason != `denied by rule "mine"` {
		t.Errorf("%+v", d)
	}
	resp := call("ci", "x", `{}`)
	resp.Phase = event.PhaseResponse
	if d, _ := r.Handle(ctx, resp); d.Action != event.Allow {
		t.Error("a policy rule judged a response")
	}
	san := mustCompile(t, Spec{Name: "san", Kind: "sanitizer", When: at("true"), Action: Deny})
	if d, _ := san.Handle(ctx, call("ci", "x", `{}`)); d.Action != event.Allow {
		t.Error("a sanitizer rule judged a request")
	}
}

func TestModify(t *testing.T) {
	ctx := context.Background()
	r := mustCompile(t, Spec{Name: "cap", When: at("has(args.limit) && args.limit > 100"), Action: Modify,
		Set: []Assign{{"arguments.limit", at("100")}, {"arguments.note", at("'capped from ' + string(args.limit)")}, {"arguments.filter.state", at("'open'")}}})
	d, err := r.Handle(ctx, call("a", "list", `{"limit": 5000, "q": "x"}`))
	if err != nil || d.Action != event.Modify {
		t.Fatalf("%+v %v", d, err)
	}
	if string(d.Params) != `{"arguments":{"filter":{"state":"open"},"limit":100,"note":"capped from 5000","q":"x"},"name":"list"}` {
		t.Errorf("params %s", d.Params)
	}
	if d, _ := r.Handle(ctx, call("a", "list", `{"limit": 10}`)); d.Action != event.Allow {
		t.Errorf("under the cap: %+v", d)
	}
	san := mustCompile(t, Spec{Name: "mark", Kind: "sanitizer", When: at("result.isError == true"), Action: Modify,
		Set: []Assign{{"content", at("[{'type': 'text', 'text': 'the tool failed; details withheld'}]")}}})
	resp := call("a", "x", `{}`)
	resp.Phase, resp.Result = event.PhaseResponse, json.RawMessage(`{"isError": true, "content": [{"type": "text", "text": "stack trace with secrets"}]}`)
	d, err = san.Handle(ctx, resp)
	if err != nil || d.Action != event.Modify || string(d.Result) != `{"content":[{"text":"the tool failed; details withheld","type":"text"}],"isError":true}` {
		t.Fatalf("%+v %s %v", d, d.Result, err)
	}
	bad := mustCompile(t, Spec{Name: "bad", When: at("true"), Action: Modify, Set: []Assign{{"name.x", at("1")}}})
	if _, err := bad.Handle(ctx, call("a", "x", `{}`)); err == nil || !strings.Contains(err.Error(), "name is not an object") {
		t.Errorf("setting inside a string: %v", err)
	}
}

// A listing carries no arguments: a rule about them does not hide the
// tool, while a rule about the tool does.
func TestListing(t *testing.T) {
	ctx := context.Background()
	list := &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/list", Agent: event.Agent{ID: "a"}, Tool: &event.Tool{Name: "delete_x"}}
	byArg := mustCompile(t, Spec{Name: "arg", When: at("args.limit > 1"), Action: Deny})
	if d, err := byArg.Handle(ctx, list); err != nil || d.Action != event.Allow {
		t.Errorf("a rule on arguments hid a listed tool: %+v %v", d, err)
	}
	byName := mustCompile(t, Spec{Name: "name", When: at("tool.name.startsWith('delete_')"), Action: Deny})
	if d, err := byName.Handle(ctx, list); err != nil || d.Action != event.Deny {
		t.Errorf("a rule on the tool's name did not hide it: %+v %v", d, err)
	}
}

// Evaluation failures are errors naming the rule, the expression and
// where it is; the chain fails closed on them.
func TestEvalErrors(t *testing.T) {
	ctx := context.Background()
	missing := mustCompile(t, Spec{Name: "m", When: at("args.limit > 1"), Action: Deny})
	_, err := missing.Handle(ctx, call("a", "x", `{}`))
	if err == nil || !strings.Contains(err.Error(), "has(args.x)") || !strings.Contains(err.Error(), "nexus.hcl, line 3, column 12") {
		t.Errorf("missing key: %v", err)
	}
	costly := mustCompile(t, Spec{Name: "c", When: at("args.xs.all(x, args.xs.all(y, x + y >= 0))"), Action: Deny, MaxCost: 10_000})
	xs, _ := json.Marshal(make([]int, 500))
	_, err = costly.Handle(ctx, call("a", "x", `{"xs": `+string(xs)+`}`))
	if err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("cost: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	slow := mustCompile(t, Spec{Name: "s", When: at("args.xs.all(x, args.xs.all(y, x + y >= 0))"), Action: Deny, MaxCost: 1 << 40})
	_, err = slow.Handle(cctx, call("a", "x", `{"xs": `+string(xs)+`}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestCompileErrors pins what a config author reads.
func TestCompileErrors(t *testing.T) {
	var out strings.Builder
	for _, s := range []Spec{
		{Name: "syntax", When: at("agent.id == 'ci' &&"), Action: Deny},
		{Name: "unknown-variable", When: at("user.id == 'ci'"), Action: Deny},
		{Name: "misspelt-field", When: at("agent.idd == 'ci' || tool.nmae == 'x'"), Action: Deny},
		{Name: "not-bool", When: at("agent.id"), Action: Deny},
		{Name: "multi-line", When: Expr{Text: "agent.id == 'ci' &&\n  tool.name.startsWith(1)", Source: diag.Source{File: "nexus.hcl", Line: 7, Column: 1}}, Action: Deny},
		{Name: "set-expression", When: at("true"), Action: Modify, Set: []Assign{{"arguments.limit", at("args.limit +")}}},
		{Name: "bad-action", When: at("true"), Action: "block"},
		{Name: "modify-without-set", When: at("true"), Action: Modify},
		{Name: "set-without-modify", When: at("true"), Action: Deny, Set: []Assign{{"arguments.a", at("1")}}},
		{Name: "sanitizer-arguments", Kind: "sanitizer", When: at("true"), Action: Modify, Set: []Assign{{"arguments.a", at("1")}}},
		{Name: "bad-path", When: at("true"), Action: Modify, Set: []Assign{{"arguments..a", at("1")}}},
		{Name: "no-when", Action: Deny},
		{Name: "too-long", When: at(strings.Repeat("a", MaxExprLen+1)), Action: Deny},
	} {
		_, err := Compile(s)
		if err == nil {
			t.Errorf("%s compiled", s.Name)
			continue
		}
		fmt.Fprintf(&out, "== %s\n%v\n", s.Name, err)
		var ce *CompileError
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				if p.Source.File != "nexus.hcl" || p.Source.Line == 0 {
					t.Errorf("%s: problem not located: %+v", s.Name, p)
				}
			}
		}
	}
	golden(t, "errors", out.String())
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{"agent.id == 'ci'", "tool.name.startsWith('delete_')", "has(args.x) && args.x > 1", "args.xs.all(x, x > 0)",
		"'a' in args.tags", "result.isError == true", "uri.matches('^file:')", "size(params) > 2", "(", "agent.", "1 +"} {
		f.Add(s)
	}
	e := call("ci", "delete_x", `{"x": 2, "xs": [1, 2], "tags": ["a"]}`)
	f.Fuzz(func(t *testing.T, expr string) {
		if len(expr) > 256 {
			return
		}
		r, err := Compile(Spec{Name: "f", When: at(expr), Action: Deny, MaxCost: 1000})
		if err != nil {
			var ce *CompileError
			if errors.As(err, &ce) && len(ce.Problems) == 0 {
				t.Fatalf("a compile error without problems for %q", expr)
			}
			return
		}
		d, err := r.Handle(context.Background(), e)
		if err == nil && d.Action != event.Deny && d.Action != event.Allow {
			t.Fatalf("%q gave %+v", expr, d)
		}
	})
}

var benchEvent = call("claude", "list_issues", `{"repo": "nexus-mcp/nexus", "state": "open", "limit": 20}`)

// BenchmarkHandle is one rule on a tool's name and agent, and one on an
// argument, each against the same check written in Go (the floor) in the
// same run.
func BenchmarkHandle(b *testing.B) {
	for _, c := range []struct {
		name, expr string
		native     func(e *event.Event) bool
	}{
		{"name", "agent.id == 'ci' && tool.name.startsWith('delete_')", func(e *event.Event) bool {
			return e.Agent.ID == "ci" && strings.HasPrefix(e.Tool.Name, "delete_")
		}},
		{"argument", "has(args.limit) && args.limit > 100", func(e *event.Event) bool {
			var p struct {
				Arguments map[string]any `json:"arguments"`
			}
			json.Unmarshal(e.Params, &p)
			n, ok := p.Arguments["limit"].(float64)
			return ok && n > 100
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := mustCompile(b, Spec{Name: "b", When: at(c.expr), Action: Deny})
			ctx := context.Background()
			// The native check runs in blocks between the rule's, so
			// both see the same machine.
			var nativeTime time.Duration
			nativeN := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := r.Handle(ctx, benchEvent); err != nil {
					b.Fatal(err)
				}
				if i%100 == 99 {
					b.StopTimer()
					t0 := time.Now()
					for range 100 {
						sink = c.native(benchEvent)
					}
					nativeTime += time.Since(t0)
					nativeN += 100
					b.StartTimer()
				}
			}
			b.StopTimer()
			per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if nativeN > 0 {
				n := float64(nativeTime.Nanoseconds()) / float64(nativeN)
				b.ReportMetric(n, "native-ns")
				b.ReportMetric(per/max(n, 1), "x-native")
			}
		})
	}
}

var sink bool

func ExampleCompile() {
	r, err := Compile(Spec{
		Name:   "no-deletes-for-ci",
		When:   Expr{Text: "agent.id == 'ci' && tool.name.startsWith('delete_')"},
		Action: Deny,
		Reason: "CI may not delete",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := &event.Event{Phase: event.PhaseRequest, Method: "tools/call", Agent: event.Agent{ID: "ci"}, Tool: &event.Tool{Name: "delete_repo"}}
	d, _ := r.Handle(context.Background(), e)
	fmt.Println(d.Action+":", d.Reason)
	// Output: deny: CI may not delete
}

func ExampleVariables() {
	for _, v := range Variables[:3] {
		fmt.Printf("%s (%s)\n", v.Name, v.Type)
	}
	// Output:
	// phase (string)
	// method (string)
	// agent (object)
}

// The README's modify example.
func TestReadmeModify(t *testing.T) {
	r := mustCompile(t, Spec{Name: "cap", When: at("has(args.limit)"), Action: Modify, Set: []Assign{{"arguments.limit", at("math.least(args.limit, 100)")}}})
	d, err := r.Handle(context.Background(), call("a", "list", `{"limit": 5000}`))
	if err != nil || string(d.Params) != `{"arguments":{"limit":100},"name":"list"}` {
		t.Fatalf("%+v %s %v", d, d.Params, err)
	}
}

// TestBounded: an expression whose worst case CEL bounds within the limit
// runs without cost tracking; one that could exceed it keeps it.
func TestBounded(t *testing.T) {
	for expr, want := range map[string]bool{
		"agent.id == 'ci' && tool.name.startsWith('delete_')": true,
		"tool.annotations.destructiveHint":                    true,
		"has(args.limit) && args.limit > 100":                 true,
		"tool.name.matches('^del')":                           false, // a regex over a value of any size
		"args.exists(k, k == 'x')":                            false, // a comprehension over the arguments
	} {
		r := mustCompile(t, Spec{Name: "b", When: at(expr), Action: Deny})
		if r.when.bounded != want {
			t.Errorf("%s: bounded %v, want %v", expr, r.when.bounded, want)
		}
	}
	// A bound over the limit is not bounded.
	r := mustCompile(t, Spec{Name: "b", When: at("tool.name in ['a', 'b', 'c']"), Action: Deny, MaxCost: 2})
	if r.when.bounded {
		t.Error("an expression that may cost more than MaxCost runs untracked")
	}
}
