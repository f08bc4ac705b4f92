package policies

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	for _, p := range policies {
		t.Run(p.dir, func(t *testing.T) {
			suites := filtertest.LoadCases(t, filepath.Join(p.dir, "cases.json"))
			for _, s := range suites {
				ways := map[string]filtertest.Handler{
					"cel":    celRule(t, p.dir),
					"rego":   regoPolicy(t, p.dir, p.entrypoint, s.Config),
					"sdk":    sdkFilter(t, p.dir, s.Config),
					"plugin": pluginFilter(t, p.dir, p.kind, s.Config),
				}
				for way, link := range ways {
					t.Run(way, func(t *testing.T) { filtertest.RunCases(t, link, s.Cases) })
				}
			}
		})
	}
}

// celRule loads rule.hcl as the host loads a config and returns its rule,
// compiled: the top-level one, or the one in its agent block.
func celRule(t *testing.T, dir string) filtertest.Handler {
	t.Helper()
	return filtertest.ConfigRule(t, filepath.Join(dir, "rule.hcl"))
}

func regoPolicy(t *testing.T, dir, entrypoint string, cfg []byte) filtertest.Handler {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "policy.rego"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := filtertest.Load(t, filtertest.BuildRego(t, string(src), entrypoint), filtertest.Spec{Name: dir + "-rego", Entrypoint: entrypoint, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sdkFilter(t *testing.T, dir string, cfg []byte) filtertest.Handler {
	t.Helper()
	f, err := filtertest.Load(t, filtertest.Build(t, filepath.Join(dir, "sdk")), filtertest.Spec{Name: dir + "-sdk", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func pluginFilter(t *testing.T, dir, kind string, cfg []byte) filtertest.Handler {
	t.Helper()
	p := plugintest.Start(t, filepath.Join(dir, "plugin"), dir)
	var c map[string]any
	if err := json.Unmarshal(cfg, &c); err != nil {
		t.Fatal(err)
	}
	// The deadline starts after the build: a cold build on a busy machine
	// takes longer than a plugin's start is given.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	link, err := p.Filter(ctx, dir+"-plugin", kind, c)
	if err != nil {
		t.Fatal(err)
	}
	return link
}
