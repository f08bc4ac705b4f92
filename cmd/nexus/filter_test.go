package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

var (
	wasmBin   = regexp.MustCompile(`/[^\s"]*/bin/testbuild/[0-9a-f]{16}/`)
	filterTmp = regexp.MustCompile(`/[^\s"]*/TestFilter[^\s"/]*/[0-9]+/`)
	timeTaken = regexp.MustCompile(`(Time: |"duration_ms": )[0-9.]+(µs|ms|s)?`)
)

func TestFilter(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	td := filepath.Join(root, "internal", "wasm", "testdata")
	deny := filtertest.Build(t, "../../filters/deny-destructive")
	redact := filtertest.Build(t, "../../filters/redact-secrets")
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	destructive := file("delete.json", `{"phase": "request", "method": "tools/call", "agent": {"id": "cli", "permission": "trusted"},
  "server": {"name": "github"}, "tool": {"name": "delete_repo", "annotations": {"destructiveHint": true}},
  "params": {"name": "delete_repo", "arguments": {"repo": "nexus"}}}`)
	yolo := file("yolo.json", `{"phase": "request", "method": "tools/call", "agent": {"id": "ops", "permission": "yolo"},
  "server": {"name": "github"}, "tool": {"name": "delete_repo", "annotations": {"destructiveHint": true}}}`)
	result := file("result.json", `{"phase": "response", "method": "tools/call", "server": {"name": "vault"}, "tool": {"name": "read"},
  "result": {"content": [{"type": "text", "text": "key AKIAIOSFODNN7EXAMPLE and password=hunter22"}]}}`)
	globs := file("globs.json", `{"tools": ["github.delete_*"]}`)
	typo := file("typo.json", `{"phase": "request", "method": "tools/call", "tol": {"name": "x"}}`)
	notJSON := file("bad.json", `{"phase": `)
	guardSrc, err := os.ReadFile("../../filters/rego-guard/policy.rego")
	if err != nil {
		t.Fatal(err)
	}
	guard := filtertest.BuildRego(t, string(guardSrc), "nexus/guard/decision")
	guardData := file("guard.json", `{"admins": ["ops"], "max_limit": 10}`)
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"filter_no_verb", []string{"filter"}, 2},
		{"filter_inspect", []string{"filter", "inspect", filepath.Join(td, "minimal.wasm")}, 0},
		{"filter_inspect_json", []string{"filter", "inspect", filepath.Join(td, "minimal.wasm"), "-o", "json"}, 0},
		{"filter_inspect_go", []string{"filter", "inspect", deny}, 0},
		{"filter_inspect_badsig", []string{"filter", "inspect", filepath.Join(td, "badsig.wasm")}, 1},
		{"filter_inspect_missing", []string{"filter", "inspect", "/nonexistent/filter.wasm"}, 3},
		{"filter_inspect_checksum_mismatch", []string{"filter", "inspect", filepath.Join(td, "minimal.wasm"), "--sha256", strings.Repeat("0", 64)}, 3},
		{"filter_test_deny", []string{"filter", "test", deny, "--event", destructive}, 4},
		{"filter_test_allow", []string{"filter", "test", deny, "--event", yolo}, 0},
		{"filter_test_config", []string{"filter", "test", deny, "--event", yolo, "--config", globs}, 0},
		{"filter_test_modify", []string{"filter", "test", redact, "--event", result}, 0},
		{"filter_test_json", []string{"filter", "test", deny, "--event", destructive, "-o", "json"}, 4},
		{"filter_test_log", []string{"filter", "test", filepath.Join(td, "misbehave.wasm"), "--event", destructive, "--config", file("g.json", `"G"`)}, 0},
		{"filter_test_trap", []string{"filter", "test", filepath.Join(td, "misbehave.wasm"), "--event", destructive, "--config", file("t.json", `"T"`)}, 1},
		{"filter_test_timeout", []string{"filter", "test", filepath.Join(td, "misbehave.wasm"), "--event", destructive, "--config", file("l.json", `"L"`), "--call-timeout", "20ms"}, 1},
		{"filter_test_refused_config", []string{"filter", "test", filepath.Join(td, "misbehave.wasm"), "--event", destructive, "--config", file("c.json", `"C"`)}, 3},
		{"filter_test_bad_event", []string{"filter", "test", deny, "--event", notJSON}, 2},
		{"filter_test_event_typo", []string{"filter", "test", deny, "--event", typo}, 2},
		{"filter_test_no_event", []string{"filter", "test", deny}, 2},
		{"filter_test_rego_deny", []string{"filter", "test", guard, "--event", destructive, "--config", guardData}, 4},
		{"filter_test_rego_admin", []string{"filter", "test", guard, "--event", yolo, "--config", guardData, "--entrypoint", "nexus/guard/decision"}, 0},
		{"filter_test_rego_entrypoint", []string{"filter", "test", guard, "--event", yolo, "--entrypoint", "nexus/guard/allow"}, 3},
		{"filter_inspect_rego", []string{"filter", "inspect", guard}, 0},
	}
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(filtertest.Dir(), "cli-cache")}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := nexus(t, "", env, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			out := "$ nexus " + quoteArgs(tc.args) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr
			out = strings.ReplaceAll(out, td+"/", "$TESTDATA/")
			out = strings.ReplaceAll(out, guard, "$REGO/bundle.tar.gz")
			out = wasmBin.ReplaceAllString(out, "$$WASM/")
			out = filterTmp.ReplaceAllString(out, "$$TMP/")
			out = timeTaken.ReplaceAllString(out, "${1}$$TIME")
			if strings.Contains(out, "$WASM/") || strings.Contains(out, "$REGO/") {
				// A Go build's (or OPA's) hash, size and memory depend on the toolchain.
				out = sha256Hex.ReplaceAllString(out, "$$SHA256")
				out = regexp.MustCompile(`(Size|Memory): [^\n]*`).ReplaceAllString(out, "$1: $$GO_BUILD")
			}
			golden(t, tc.name, out)
		})
	}
}
