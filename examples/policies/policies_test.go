package policies

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	hostplugin "github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	os.Exit(code)
}

// The policies, each with the kind of link it is and the Rego rule whose
// value decides.
var policies = []struct {
	dir, kind, entrypoint string
}{
	{"deny-destructive", "policy", "policies/deny_destructive/deny"},
	{"allowlist", "policy", "policies/allowlist/deny"},
	{"redact", "sanitizer", "policies/redact/decision"},
}

// TestFourWays runs each policy's cases.json through each of its four
// implementations, loaded the way the host loads them.
func TestFourWays(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	pm := plugintest.Manager(t)
	for _, p := range policies {
		t.Run(p.dir, func(t *testing.T) {
			suites := filtertest.LoadCases(t, filepath.Join(p.dir, "cases.json"))
			for _, s := range suites {
				ways := map[string]policy.Link{
					"cel":    celRule(t, p.dir),
					"rego":   regoPolicy(t, rt, p.dir, p.entrypoint, s.Config),
					"sdk":    sdkFilter(t, rt, p.dir, s.Config),
					"plugin": pluginFilter(t, pm, p.dir, p.kind, s.Config),
				}
				for way, link := range ways {
					t.Run(way, func(t *testing.T) { filtertest.RunCases(t, link, s.Cases) })
				}
			}
		})
	}
}

// celRule loads rule.hcl as the host loads a config and returns its rule:
// the top-level one, or the one in its agent block.
func celRule(t *testing.T, dir string) policy.Link {
	t.Helper()
	cfg, err := config.LoadFile(filepath.Join(dir, "rule.hcl"), "test")
	if err != nil {
		var b strings.Builder
		diag.Render(&b, err)
		t.Fatal(b.String())
	}
	var rules []*config.Filter
	rules = append(rules, cfg.Filters...)
	for _, a := range cfg.Agents {
		rules = append(rules, a.Rules...)
	}
	if len(rules) != 1 || rules[0].Rule == nil || rules[0].Rule.Compiled == nil {
		t.Fatalf("%s/rule.hcl should hold one rule, found %d", dir, len(rules))
	}
	return rules[0].Rule.Compiled
}

func regoPolicy(t *testing.T, rt *wasm.Runtime, dir, entrypoint string, cfg []byte) policy.Link {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "policy.rego"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := rt.Load(context.Background(), wasm.Spec{Name: dir + "-rego", Path: filtertest.BuildRego(t, string(src), entrypoint), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return f
}

func sdkFilter(t *testing.T, rt *wasm.Runtime, dir string, cfg []byte) policy.Link {
	t.Helper()
	f, err := rt.Load(context.Background(), wasm.Spec{Name: dir + "-sdk", Path: filtertest.Build(t, filepath.Join(dir, "sdk")), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return f
}

func pluginFilter(t *testing.T, pm *hostplugin.Manager, dir, kind string, cfg []byte) policy.Link {
	t.Helper()
	bin := plugintest.Build(t, filepath.Join(dir, "plugin"))
	conf := &config.Config{Plugins: []*config.Plugin{plugintest.Pinned(t, dir, bin)}}
	var c map[string]any
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	// The deadline starts after the build: a cold build on a busy machine
	// takes longer than a plugin's start is given.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	link, err := pm.Filter(ctx, conf, &config.Filter{Name: dir + "-plugin", Kind: kind, Plugin: dir, Config: c})
	if err != nil {
		t.Fatal(err)
	}
	return link
}
