package main

import (
	"regexp"
	"testing"

	"github.com/nexus-mcp/nexus/host/plugin/plugintest"
)

var (
	pluginDir = regexp.MustCompile(`/[^\s"]*nexus-plugin-build-[0-9]+`)
	sha256Hex = regexp.MustCompile(`[0-9a-f]{64}`)
)

func TestPluginInspect(t *testing.T) {
	t.Cleanup(plugintest.Cleanup)
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
