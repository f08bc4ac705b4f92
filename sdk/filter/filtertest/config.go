package filtertest

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
)

// A filter's or rule's example config is part of what it ships: these
// load one as the host loads a config (nexus.hcl or mcpServers JSON, with
// no environment and no other layer), so a test runs what a user pastes.

// loadConfig loads file alone, failing t with its reports.
func loadConfig(t testing.TB, file string) *config.Config {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Options{Files: []string{abs}, Dir: filepath.Dir(abs), Home: t.TempDir(),
		LookupEnv: func(string) (string, bool) { return "", false }, NoDefault: true})
	if err != nil {
		t.Fatal(err) // the reports, one for each problem
	}
	return cfg
}

// ConfigRule loads the config file and returns its one rule, compiled
// as the chain runs it: a top-level rule block or one in an agent block.
// Any other number of rules fails t.
func ConfigRule(t testing.TB, file string) Handler {
	t.Helper()
	cfg := loadConfig(t, file)
	rules := cfg.Filters[:len(cfg.Filters):len(cfg.Filters)]
	for _, a := range cfg.Agents {
		rules = append(rules, a.Rules...)
	}
	if len(rules) != 1 || rules[0].Rule == nil || rules[0].Rule.Compiled == nil {
		t.Fatalf("%s should hold one rule, found %d", file, len(rules))
	}
	return rules[0].Rule.Compiled
}

// ConfigFilter is a WASM filter block of a config file: Load(t, Path,
// Spec) loads it as the host would.
type ConfigFilter struct {
	Path string // the module (wasm), resolved against the config's directory
	Spec Spec   // the block's name, entrypoint and config
}

// ConfigFilters loads the config file and returns its filter blocks, in
// run order (rule blocks left out).
func ConfigFilters(t testing.TB, file string) []ConfigFilter {
	t.Helper()
	var out []ConfigFilter
	for _, f := range loadConfig(t, file).Filters {
		if f.Rule != nil {
			continue
		}
		raw, err := json.Marshal(f.Config)
		if err != nil {
			t.Fatal(err)
		}
		if f.Config == nil {
			raw = nil
		}
		out = append(out, ConfigFilter{Path: f.WASM, Spec: Spec{Name: f.Name, Entrypoint: f.Entrypoint, Config: raw}})
	}
	return out
}
