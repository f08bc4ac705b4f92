package regoguard

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

const entrypoint = "nexus/guard/decision"

func bundle(t testing.TB) string {
	t.Helper()
	src, err := os.ReadFile("policy.rego")
	if err != nil {
		t.Fatal(err)
	}
	return filtertest.BuildRego(t, string(src), entrypoint)
}

// TestCases runs testdata/cases.json through the compiled policy.
func TestCases(t *testing.T) {
	path := bundle(t)
	for _, s := range filtertest.LoadCases(t, "testdata/cases.json") {
		t.Run(s.Name, func(t *testing.T) {
			f, err := filtertest.Load(t, path, filtertest.Spec{Name: "rego-guard", Entrypoint: entrypoint, Config: s.Config})
			if err != nil {
				t.Fatal(err) // the report the host shows
			}
			filtertest.RunCases(t, f, s.Cases)
		})
	}
}

// TestExampleConfig loads config.example.hcl, the block the README shows,
// as the host does (the bundle where its wasm path says), and checks that
// it is the config of the cases' first suite.
func TestExampleConfig(t *testing.T) {
	example, err := os.ReadFile("config.example.hcl")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, example) {
		t.Fatal("README.md does not show config.example.hcl word for word")
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "bin", "filters", "rego-guard.tar.gz")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	b, err := os.ReadFile(bundle(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dst, b, 0o644)
	cfgPath := filepath.Join(dir, "nexus.hcl")
	os.WriteFile(cfgPath, example, 0o644)
	blocks := filtertest.ConfigFilters(t, cfgPath)
	if len(blocks) != 1 {
		t.Fatalf("config.example.hcl has %d filter blocks, want 1", len(blocks))
	}
	block := blocks[0]
	if block.Path != dst || block.Spec.Entrypoint != entrypoint {
		t.Fatalf("the block's wasm = %q, entrypoint = %q; want %q, %q", block.Path, block.Spec.Entrypoint, dst, entrypoint)
	}
	config := block.Spec.Config
	suite := filtertest.LoadCases(t, "testdata/cases.json")[0]
	if !filtertest.EqualJSON(config, suite.Config) {
		t.Fatalf("the example's config %s is not the cases' %s", config, suite.Config)
	}
	f, err := filtertest.Load(t, block.Path, block.Spec)
	if err != nil {
		t.Fatal(err)
	}
	filtertest.RunCases(t, f, suite.Cases)
}

var benchEvent = []byte(`{"abi":1,"phase":"request","method":"tools/call","agent":{"id":"claude","permission":"trusted"},"server":{"name":"github"},"tool":{"name":"list_issues"},"params":{"name":"list_issues","arguments":{"repo":"nexus-mcp/nexus","state":"open","limit":20}}}`)

// BenchmarkRegoGuard is one call of the compiled policy, against the same
// checks written in Go (in process, so it is the floor).
func BenchmarkRegoGuard(b *testing.B) {
	f, err := filtertest.Load(b, bundle(b), filtertest.Spec{Entrypoint: entrypoint,
		Config: json.RawMessage(`{"admins": ["release-bot"], "blocked_servers": ["legacy-ftp"], "max_limit": 100}`)})
	if err != nil {
		b.Fatal(err)
	}
	var e event.Event
	if err := json.Unmarshal(benchEvent, &e); err != nil {
		b.Fatal(err)
	}
	sink := ""
	filtertest.Compare(b, func() error {
		_, err := f.Handle(context.Background(), &e)
		return err
	}, filtertest.Baselines{Native: func() { sink = nativeGuard(benchEvent) }})
	_ = sink
}

var (
	destructiveName = regexp.MustCompile(`^(delete|drop|remove|destroy|purge)_`)
	credential      = regexp.MustCompile(`(sk-[a-zA-Z0-9]{16,}|ghp_[A-Za-z0-9]{20,}|AKIA[0-9A-Z]{16})`)
	admins          = []string{"release-bot"}
	blocked         = []string{"legacy-ftp"}
)

// nativeGuard is policy.rego in Go, from the event's JSON to the decision.
//
//go:noinline
func nativeGuard(raw []byte) string {
	var e struct {
		Method string
		Agent  struct{ ID string }
		Server struct{ Name string }
		Tool   struct {
			Name        string
			Annotations struct{ DestructiveHint bool }
		}
		Params struct{ Arguments map[string]any }
	}
	if json.Unmarshal(raw, &e) != nil {
		return "error"
	}
	var deny []string
	if e.Method == "tools/call" && (e.Tool.Annotations.DestructiveHint || destructiveName.MatchString(e.Tool.Name)) && !slices.Contains(admins, e.Agent.ID) {
		deny = append(deny, e.Agent.ID+" may not call the destructive tool "+e.Server.Name+"."+e.Tool.Name)
	}
	if slices.Contains(blocked, e.Server.Name) {
		deny = append(deny, "server "+e.Server.Name+" is blocked")
	}
	for name, v := range e.Params.Arguments {
		if s, ok := v.(string); ok && credential.MatchString(s) {
			deny = append(deny, "argument "+name+" looks like a credential")
		}
	}
	if len(deny) > 0 {
		sort.Strings(deny)
		return strings.Join(deny, "; ")
	}
	if n, ok := e.Params.Arguments["limit"].(float64); ok && n > 100 {
		return "modify"
	}
	return "allow"
}
