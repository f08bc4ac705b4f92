package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

var (
	pluginDir = regexp.MustCompile(`/[^\s"]*/bin/testbuild/[0-9a-f]{16}`)
	sha256Hex = regexp.MustCompile(`[0-9a-f]{64}`)
)

func TestPluginInspect(t *testing.T) {
	bin := plugintest.Build(t, "../../plugins/policy-ratelimit")
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"plugin_inspect", []string{"plugin", "inspect", bin}, 0},
		{"plugin_inspect_json", []string{"plugin", "inspect", bin, "-o", "json"}, 0},
		{"plugin_inspect_checksum_mismatch", []string{"plugin", "inspect", bin, "--sha256", "0000000000000000000000000000000000000000000000000000000000000000"}, 3},
		{"plugin_inspect_missing", []string{"plugin", "inspect", "/nonexistent/nexus-plugin"}, 3},
		{"plugin_inspect_not_a_plugin", []string{"plugin", "inspect", "/bin/true"}, 3},
		{"plugin_no_verb", []string{"plugin"}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := nexus(t, "", nil, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			out := "$ nexus " + quoteArgs(tc.args) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr
			out = pluginDir.ReplaceAllString(out, "$$PLUGINS")
			out = sha256Hex.ReplaceAllStringFunc(out, func(s string) string {
				if s == "0000000000000000000000000000000000000000000000000000000000000000" {
					return s
				}
				return "$SHA256"
			})
			golden(t, tc.name, out)
		})
	}
}

// config validate starts the plugins a config uses and checks their
// configs against the plugins' own schemas; a config that fails is a
// config error (exit 2) there and when a command loads it.
func TestValidatePluginConfigs(t *testing.T) {
	bin := plugintest.Build(t, "../../plugins/policy-ratelimit")
	sum, err := sha256File(bin)
	if err != nil {
		t.Fatal(err)
	}
	write := func(rate string) string {
		p := filepath.Join(t.TempDir(), "nexus.hcl")
		hcl := fmt.Sprintf(`server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

plugin "ratelimit" {
  path   = %q
  sha256 = %q
}

filter "limits" {
  kind   = "policy"
  plugin = "ratelimit"
  config = {
    per_agent = { rate = %q }
  }
}
`, bin, sum, rate)
		if err := os.WriteFile(p, []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	clean := func(s string) string {
		s = pluginDir.ReplaceAllString(s, "$$PLUGINS")
		s = sha256Hex.ReplaceAllString(s, "$$SHA256")
		return regexp.MustCompile(`/[^\s"]*/nexus\.hcl`).ReplaceAllString(s, "$$DIR/nexus.hcl")
	}

	good := write("10/m")
	stdout, stderr, code := nexus(t, "", nil, "config", "validate", "--config", good)
	if code != 0 || !strings.Contains(stdout, `ok  plugin "ratelimit": 1 config matches its schema`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	bad := write("lots")
	stdout, stderr, code = nexus(t, "", nil, "config", "validate", "--config", bad)
	if code != 2 {
		t.Errorf("validate of a config the plugin's schema refuses: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	golden(t, "config_validate_plugin_schema", clean("--- stdout\n"+stdout+"--- stderr\n"+stderr))

	// --skip-plugins checks the rest without starting them.
	if _, stderr, code := nexus(t, "", nil, "config", "validate", "--skip-plugins", "--config", bad); code != 0 {
		t.Errorf("--skip-plugins: exit %d\n%s", code, stderr)
	}
	// The same config is a config error (2) for a command that loads it.
	if _, stderr, code := nexus(t, "", nil, "tools", "--config", bad); code != 2 {
		t.Errorf("nexus tools with the refused config: exit %d, want 2\n%s", code, stderr)
	}
	// A plugin that cannot be started cannot check its configs: an error
	// that says so and how to go on.
	missing := good
	b, _ := os.ReadFile(missing)
	os.WriteFile(missing, []byte(strings.Replace(string(b), bin, bin+"-gone", 1)), 0o600)
	stdout, stderr, code = nexus(t, "", nil, "config", "validate", "--config", missing)
	if code != 2 || !strings.Contains(stderr, "--skip-plugins") {
		t.Errorf("a missing plugin: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func sha256File(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", sha256.Sum256(b)), nil
}
