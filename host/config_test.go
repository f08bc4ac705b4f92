package host_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host"
)

// A Config's methods read the model LoadConfig and ParseConfig made, and
// the zero Config holds nothing (no panic).
func TestConfigMethods(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {
  "b": {"url": "http://127.0.0.1:1/mcp"},
  "a": {"command": "x", "args": ["-v"], "env": {"K": "v"}, "cwd": "/w"}
}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := host.LoadConfig(host.ConfigOptions{Files: []string{file}, Dir: t.TempDir(), Home: t.TempDir(), NoDefault: true,
		LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("names %v", got)
	}
	a := cfg.Server("a")
	if a == nil || a.Type != host.TypeStdio || !slices.Equal(a.Command, []string{"x", "-v"}) || a.Env["K"] != "v" ||
		a.Cwd != "/w" || !a.Enabled || a.Source.File != file || a.Source.Line == 0 {
		t.Errorf("server a %+v", a)
	}
	if b := cfg.Servers()[1]; b.Type != host.TypeHTTP || b.URL != "http://127.0.0.1:1/mcp" {
		t.Errorf("server b %+v", b)
	}
	if cfg.Server("c") != nil {
		t.Error("an unknown server")
	}
	if s := cfg.Summary(); s != (host.ConfigSummary{Files: 1, Servers: 2}) {
		t.Errorf("summary %+v", s)
	}
	if f := cfg.Files(); len(f) != 1 || f[0].Path != file {
		t.Errorf("files %+v", f)
	}
	v := cfg.View(false)
	if len(v.Servers) != 2 || v.Servers[0].Kind != "server" || v.Servers[0].Name != "a" || v.Servers[0].Source.File != file ||
		v.Servers[0].Settings["command"] == nil {
		t.Errorf("view %+v", v.Servers)
	}
	out, _, err := cfg.Compile(host.FormatMCPServers, false)
	if err != nil || !strings.Contains(string(out), `"mcpServers"`) {
		t.Errorf("compile: %s %v", out, err)
	}
	if _, _, err := cfg.Compile("yaml", false); err == nil || !strings.Contains(err.Error(), "yaml") {
		t.Errorf("an unknown format: %v", err)
	}
	if !slices.Contains(host.CompileFormats(), host.FormatVSCode) {
		t.Errorf("formats %v", host.CompileFormats())
	}

	var zero host.Config
	if zero.Servers() != nil || zero.Server("a") != nil || zero.Summary() != (host.ConfigSummary{}) || zero.Untrusted() != nil ||
		host.UntrustedReport(&zero) != nil {
		t.Error("the zero Config holds something")
	}
}
