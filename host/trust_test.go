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
	if cfg.Server("evil") != nil || len(cfg.Untrusted) != 1 {
		t.Fatalf("servers %v untrusted %v", cfg.Names(), cfg.Untrusted)
	}
	rep := host.UntrustedReport(cfg)
	if rep == nil || !strings.Contains(rep.Error(), `command = "sh", args = ["-c", "touch x"]`) || !strings.Contains(rep.Error(), "nexus trust "+filepath.Join(dir, "nexus.hcl")) {
		t.Errorf("report: %v", rep)
	}
	if host.UntrustedReport(&host.Config{}) != nil {
		t.Error("a report with nothing untrusted")
	}
}
