package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host"
)

// An embedder's LoadConfig leaves an untrusted project config out as the
// command line does, and UntrustedReport says what it would run.
func TestLoadConfigUntrusted(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	hcl := "server \"evil\" {\n  stdio {\n    command = \"sh\"\n    args    = [\"-c\", \"touch x\"]\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	lookup := func(string) (string, bool) { return "", false }
	cfg, err := host.LoadConfig(host.ConfigOptions{Dir: dir, Home: home, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server("evil") != nil || len(cfg.Untrusted()) != 1 {
		t.Fatalf("servers %v untrusted %v", cfg.Names(), cfg.Untrusted())
	}
	rep := host.UntrustedReport(cfg)
	if rep == nil || !strings.Contains(rep.Error(), `command = "sh", args = ["-c", "touch x"]`) || !strings.Contains(rep.Error(), "nexus trust "+filepath.Join(dir, "nexus.hcl")) {
		t.Errorf("report: %v", rep)
	}
	if host.UntrustedReport(&host.Config{}) != nil {
		t.Error("a report with nothing untrusted")
	}
}

// TrustUntrusted trusts what LoadConfig left out, as it was shown: the
// next load applies it, the store lists it, and an edit takes it away.
func TestTrustUntrusted(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(file, []byte("server \"ts\" {\n  stdio {\n    command = \"nexus\"\n  }\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(home, "trust.json")
	lookup := func(k string) (string, bool) {
		if k == "NEXUS_TRUST" {
			return store, true
		}
		return "", false
	}
	o := host.ConfigOptions{Dir: dir, Home: home, LookupEnv: lookup}
	cfg, err := host.LoadConfig(o)
	if err != nil || len(cfg.Untrusted()) != 1 {
		t.Fatalf("untrusted: %v %v", cfg.Untrusted(), err)
	}
	if err := host.TrustUntrusted(store, cfg); err != nil {
		t.Fatal(err)
	}
	if cfg, err = host.LoadConfig(o); err != nil || cfg.Server("ts") == nil {
		t.Fatalf("after trust: %v %v", cfg.Names(), err)
	}
	list, err := host.ReadTrust(store)
	key, _ := host.TrustKey(file)
	_, sum, _ := host.HashConfig(file)
	if err != nil || len(list) != 1 || list[0].Path != key || list[0].SHA256 != sum {
		t.Fatalf("store: %+v %v", list, err)
	}
	if err := os.WriteFile(file, []byte("# edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err = host.LoadConfig(o); err != nil || len(cfg.Untrusted()) != 1 || !cfg.Untrusted()[0].Edited {
		t.Fatalf("after an edit: %+v %v", cfg.Untrusted(), err)
	}
	// Untrust: the store empties.
	if err := host.UpdateTrust(store, func(l []host.Trusted) ([]host.Trusted, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if list, err := host.ReadTrust(store); err != nil || len(list) != 0 {
		t.Fatalf("emptied: %+v %v", list, err)
	}
}
