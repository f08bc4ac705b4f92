package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

func buildRego(t testing.TB, src string, entrypoints ...string) string {
	t.Helper()
	return filtertest.BuildRego(t, src, entrypoints...)
}

const regoPolicy = `package nexus

import rego.v1

default allow := false

allow if input.tool.name in data.allowed

deny contains msg if {
	startswith(input.tool.name, "delete_")
	msg := sprintf("%s may not call %s (%d args)", [input.agent.id, input.tool.name, count(input.params.arguments)])
}

deny contains "no production repos" if input.params.arguments.repo == "prod"

decision := {"action": "modify", "params": object.union(input.params, {"arguments": {"repo": "sandbox"}})} if {
	input.params.arguments.repo == "prod"
} else := {"action": "allow"}

sanitize := {"action": "modify", "result": {"content": [{"type": "text", "text": regex.replace(input.result.content[0].text, "sk-[a-z0-9]+", "[redacted]")}]}}

undefined_rule if input.never
`

func regoEvent(tool, repo string) *event.Event {
	e := toolCall()
	e.Tool = &event.Tool{Name: tool}
	e.Params = json.RawMessage(`{"name":"` + tool + `","arguments":{"repo":"` + repo + `"}}`)
	return e
}

func loadRego(t testing.TB, rt *wasm.Runtime, spec wasm.Spec) *wasm.Filter {
	t.Helper()
	f, err := rt.Load(context.Background(), spec)
	if err != nil {
		t.Fatal(render(err))
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return f
}

func TestRegoDecisions(t *testing.T) {
	bundle := buildRego(t, regoPolicy, "nexus/allow", "nexus/deny", "nexus/decision", "nexus/sanitize", "nexus/undefined_rule")
	rt := filtertest.Runtime(t, wasm.Options{})
	cfg := json.RawMessage(`{"allowed": ["echo", "list_issues"]}`)
	ctx := context.Background()

	allow := loadRego(t, rt, wasm.Spec{Name: "allow", Path: bundle, Entrypoint: "nexus/allow", Config: cfg})
	if info := allow.Inspect(); !strings.HasPrefix(info.ABI, "opa 1.") {
		t.Errorf("ABI %q", info.ABI)
	}
	for tool, want := range map[string]string{"echo": event.Allow, "list_issues": event.Allow, "delete_repo": event.Deny} {
		d, err := allow.Handle(ctx, regoEvent(tool, "x"))
		if err != nil || d.Action != want {
			t.Errorf("allow %s: %+v %v", tool, d, err)
		}
	}
	if d, _ := allow.Handle(ctx, regoEvent("delete_repo", "x")); d.Reason != `policy allow: nexus/allow is false` {
		t.Errorf("reason %q", d.Reason)
	}

	deny := loadRego(t, rt, wasm.Spec{Name: "deny", Path: bundle, Entrypoint: "data.nexus.deny"})
	d, err := deny.Handle(ctx, regoEvent("echo", "x"))
	if err != nil || d.Action != event.Allow {
		t.Errorf("empty deny set: %+v %v", d, err)
	}
	d, err = deny.Handle(ctx, regoEvent("delete_repo", "prod"))
	if err != nil || d.Action != event.Deny || d.Reason != "cli may not call delete_repo (1 args); no production repos" {
		t.Errorf("deny set: %+v %v", d, err)
	}

	modify := loadRego(t, rt, wasm.Spec{Name: "decision", Path: bundle, Entrypoint: "nexus/decision"})
	d, err = modify.Handle(ctx, regoEvent("push", "prod"))
	if err != nil || d.Action != event.Modify || !strings.Contains(string(d.Params), `"repo":"sandbox"`) || !strings.Contains(string(d.Params), `"name":"push"`) {
		t.Errorf("modify: %+v %v", d, err)
	}
	if d, err = modify.Handle(ctx, regoEvent("push", "dev")); err != nil || d.Action != event.Allow {
		t.Errorf("object allow: %+v %v", d, err)
	}

	san := loadRego(t, rt, wasm.Spec{Name: "sanitize", Path: bundle, Entrypoint: "nexus/sanitize"})
	resp := regoEvent("echo", "x")
	resp.Phase, resp.Result = event.PhaseResponse, json.RawMessage(`{"content":[{"type":"text","text":"key sk-abc123 here"}]}`)
	d, err = san.Handle(ctx, resp)
	if err != nil || d.Action != event.Modify || string(d.Result) != `{"content":[{"text":"key [redacted] here","type":"text"}]}` {
		t.Errorf("sanitizer: %+v %s %v", d, d.Result, err)
	}

	undef := loadRego(t, rt, wasm.Spec{Name: "undef", Path: bundle, Entrypoint: "nexus/undefined_rule"})
	d, err = undef.Handle(ctx, regoEvent("echo", "x"))
	if err != nil || d.Action != event.Deny || !strings.Contains(d.Reason, "undefined") {
		t.Errorf("undefined: %+v %v", d, err)
	}
}

// The host builtins a compiled policy calls back for: their results as
// OPA computes them.
func TestRegoBuiltins(t *testing.T) {
	src := `package b

import rego.v1

decision := {"action": "deny", "reason": json.marshal(results)}

results := {
	"sprintf": sprintf("%s=%d %v %.1f", ["n", 3, [1, "a"], 2.5]),
	"sha256": crypto.sha256("abc"),
	"md5": crypto.md5("abc"),
	"hmac": crypto.hmac.sha256("msg", "key"),
	"hmac_equal": crypto.hmac.equal("a", "a"),
	"hex": hex.encode("hi"),
	"prefix": strings.any_prefix_match(["delete_x", "get"], "del"),
	"count": strings.count("a,b,c", ","),
	"indexof_n": indexof_n("ababa", "a"),
	"find_n": regex.find_n("[0-9]+", "a1b22c333", 2),
	"split": regex.split(",", "a,b"),
	"replace": regex.replace("a1b2", "[0-9]", "#"),
	"query": urlquery.encode_object({"a": "1 2"}),
	"rfc3339": time.parse_rfc3339_ns("2026-01-02T03:04:05Z"),
	"date": time.date(1767323045000000000),
	"weekday": time.weekday(1767323045000000000),
	"add_date": time.add_date(0, 1, 0, 0),
	"duration": time.parse_duration_ns("1m"),
	"range": numbers.range_step(0, 10, 5),
	"subset": object.subset({"a": {"b": 1, "c": 2}}, {"a": {"b": 1}}),
	"marshal": json.marshal_with_options({"a": 1}, {"indent": " "}),
	"now_same": time.now_ns() == time.now_ns(),
}
`
	f := loadRego(t, filtertest.Runtime(t, wasm.Options{}), wasm.Spec{Name: "b", Path: buildRego(t, src, "b/decision"), Entrypoint: "b/decision"})
	d, err := f.Handle(context.Background(), toolCall())
	if err != nil {
		t.Fatal(err)
	}
	got := d.Reason
	for _, want := range []string{
		`"sprintf":"n=3 [1,\"a\"] 2.5"`,
		`"sha256":"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"`,
		`"md5":"900150983cd24fb0d6963f7d28e17f72"`,
		`"hmac":"2d93cbc1be167bcb1637a4a23cbff01a7878f0c50ee833954ea5221bb1b8c628"`,
		`"hmac_equal":true`, `"hex":"6869"`, `"prefix":true`, `"count":2`, `"indexof_n":[0,2,4]`,
		`"find_n":["1","22"]`, `"split":["a","b"]`, `"replace":"a#b#"`, `"query":"a=1+2"`,
		`"rfc3339":1767323045000000000`, `"date":[2026,1,2]`, `"weekday":"Friday"`,
		`"add_date":31536000000000000`, `"duration":60000000000`, `"range":[0,5,10]`, `"subset":true`,
		`"marshal":"{\n \"a\": 1\n}"`, `"now_same":true`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s in\n%s", want, got)
		}
	}
}

// Builtins that reach outside the sandbox are refused at load, by name;
// builtins this host lacks too, with the other message.
func TestRegoRefusedBuiltins(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	for name, src := range map[string]string{
		"impure":  "package p\nimport rego.v1\nallow if {\n\thttp.send({\"method\": \"get\", \"url\": input.tool.name}).status_code == 200\n\tnet.lookup_ip_addr(input.tool.name)\n\tgraphql.is_valid(input.tool.name, \"type Query { a: Int }\")\n}\n",
		"missing": "package p\nimport rego.v1\nallow if graphql.is_valid(input.tool.name, \"type Query { a: Int }\")\n",
	} {
		t.Run(name, func(t *testing.T) {
			bundle := buildRego(t, src, "p/allow")
			_, err := rt.Load(context.Background(), wasm.Spec{Name: name, Path: bundle, Entrypoint: "p/allow"})
			if err == nil {
				t.Fatal("loaded")
			}
			out := strings.ReplaceAll(render(err), bundle, "BUNDLE")
			golden(t, "rego_"+name, out)
		})
	}
}

// Errors of a Rego filter's setup: its entrypoint and its data.
func TestRegoLoadErrors(t *testing.T) {
	bundle := buildRego(t, regoPolicy, "nexus/allow", "nexus/deny")
	rt := filtertest.Runtime(t, wasm.Options{})
	dir := t.TempDir()
	badData := filepath.Join(dir, "data.json")
	os.WriteFile(badData, []byte(`[1,2]`), 0o644)
	truncated := filepath.Join(dir, "truncated.tar.gz")
	b, _ := os.ReadFile(bundle)
	os.WriteFile(truncated, b[:len(b)/2], 0o644)
	notWASM := filepath.Join(dir, "notwasm.tar.gz")
	os.WriteFile(notWASM, wasm.TarGz(t, map[string]string{"/policy.wasm": "package nexus\n", "/data.json": "{}"}), 0o644)
	for name, spec := range map[string]wasm.Spec{
		"truncated_bundle": {Path: truncated},
		"bundle_not_wasm":  {Path: notWASM},
		"no_entrypoint":    {Path: bundle},
		"wrong_entrypoint": {Path: bundle, Entrypoint: "nexus/allw"},
		"bad_data_file":    {Path: bundle, Entrypoint: "nexus/allow", DataFile: badData},
		"not_opa":          {Path: "testdata/minimal.wasm", ABI: wasm.ABIOPA},
	} {
		t.Run(name, func(t *testing.T) {
			spec.Name = "rego"
			_, err := rt.Load(context.Background(), spec)
			if err == nil {
				t.Fatal("loaded")
			}
			out := strings.ReplaceAll(render(err), bundle, "BUNDLE")
			out = strings.ReplaceAll(out, dir, "DIR")
			golden(t, "rego_"+name, out)
		})
	}
}

// The module alone (policy.wasm out of the bundle) loads too, its data
// then coming from the data file and the config, the config winning.
func TestRegoModuleAndData(t *testing.T) {
	src := "package d\nimport rego.v1\nallow if data.limits[input.agent.id] > count(input.params.arguments)\n"
	bundle := buildRego(t, src, "d/allow")
	dir := t.TempDir()
	cmd := exec.Command("tar", "xzf", bundle, "-C", dir, "/policy.wasm")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	dataFile := filepath.Join(dir, "limits.json")
	os.WriteFile(dataFile, []byte(`{"limits": {"cli": 5, "ci": 0}}`), 0o644)
	rt := filtertest.Runtime(t, wasm.Options{})
	f := loadRego(t, rt, wasm.Spec{Name: "d", Path: filepath.Join(dir, "policy.wasm"), DataFile: dataFile, Config: json.RawMessage(`{"limits": {"cli": 0}}`)})
	if d, err := f.Handle(context.Background(), toolCall()); err != nil || d.Action != event.Deny {
		t.Fatalf("config over data file: %+v %v", d, err)
	}
	f2 := loadRego(t, rt, wasm.Spec{Name: "d2", Path: filepath.Join(dir, "policy.wasm"), DataFile: dataFile})
	if d, err := f2.Handle(context.Background(), toolCall()); err != nil || d.Action != event.Allow {
		t.Fatalf("data file: %+v %v", d, err)
	}
}

// A Rego filter runs under the limits of every filter: a policy that
// builds a huge value hits memory_mb, one that computes too long its
// timeout; either way the instance is replaced and the next call works.
func TestRegoLimits(t *testing.T) {
	src := `package l

import rego.v1

big := [x | some x in numbers.range(1, input.params.arguments.n)]
allow if count(big) > 0
slow if count([x | some x in numbers.range(1, 3000); some y in numbers.range(1, 3000); x == y + input.params.arguments.n]) >= 0
`
	bundle := buildRego(t, src, "l/allow", "l/slow")
	rt := filtertest.Runtime(t, wasm.Options{})
	ctx := context.Background()
	call := func(n int) *event.Event {
		e := toolCall()
		e.Params = json.RawMessage(`{"name":"x","arguments":{"n":` + strconv.Itoa(n) + `}}`)
		return e
	}
	mem := loadRego(t, rt, wasm.Spec{Name: "mem", Path: bundle, Entrypoint: "l/allow", MemoryMB: 4, Pool: 1, Timeout: time.Minute})
	if _, err := mem.Handle(ctx, call(10_000_000)); !errors.Is(err, wasm.ErrMemoryLimit) {
		t.Fatalf("want the memory limit, got %v", err)
	}
	if d, err := mem.Handle(ctx, call(10)); err != nil || d.Action != event.Allow {
		t.Fatalf("after the limit: %+v %v", d, err)
	}
	slow := loadRego(t, rt, wasm.Spec{Name: "slow", Path: bundle, Entrypoint: "l/slow", Timeout: 20 * time.Millisecond, Pool: 1})
	if _, err := slow.Handle(ctx, call(1)); !errors.Is(err, wasm.ErrTimeout) {
		t.Fatalf("want the timeout, got %v", err)
	}
}

// Many calls on a pool: the heap is reset by every evaluation, so memory
// does not grow with the number of calls. The per-call limit is not what
// is tested (TestRegoLimits is): at the 100 ms default, one of 2,400 calls
// stalled by a loaded machine under -race would fail the test.
func TestRegoConcurrentCalls(t *testing.T) {
	bundle := buildRego(t, regoPolicy, "nexus/deny")
	f := loadRego(t, filtertest.Runtime(t, wasm.Options{}), wasm.Spec{Name: "deny", Path: bundle, Pool: 4, MemoryMB: 4, Timeout: time.Minute})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				tool := "echo"
				if (g+i)%2 == 0 {
					tool = "delete_x"
				}
				d, err := f.Handle(context.Background(), regoEvent(tool, "x"))
				if err != nil || (d.Action == event.Deny) != (tool == "delete_x") {
					errs <- errors.New(tool + ": " + d.Action + " " + d.Reason)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func render(err error) string {
	var b strings.Builder
	diag.Render(&b, explain.Error(err))
	return b.String()
}
