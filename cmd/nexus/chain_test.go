package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// buildFilter compiles a first-party WASM filter the way `make filters`
// does and returns the test's own copy (a test may damage it; the build
// is shared by the checkout's test processes, see testenv.Build).
func buildFilter(t *testing.T, name string) (path, sum string) {
	t.Helper()
	built, err := testenv.Build(testenv.Root(t), "./filters/"+name, name+".wasm",
		[]string{"-buildmode=c-shared"}, []string{"GOOS=wasip1", "GOARCH=wasm"})
	if err != nil {
		t.Fatalf("building filter %s: %v", name, err)
	}
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), name+".wasm")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(data)
	return path, hex.EncodeToString(h[:])
}

// TestCallRunsConfiguredFilters: `nexus call` goes through the filter
// blocks of the config; a denial exits 4 naming the filter and its reason.
func TestCallRunsConfiguredFilters(t *testing.T) {
	wasmPath, sum := buildFilter(t, "deny-destructive") // its own copy: tampered with below
	cfg := `
server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

filter "no-destructive" {
  kind   = "policy"
  wasm   = "` + wasmPath + `"
  sha256 = "` + sum + `"
  config = { tools = ["testserver.fail"] }
}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		bin := testenv.Nexus(t)
		cmd := exec.Command(bin, append([]string{"--config", filepath.Join(dir, "nexus.hcl"), "--yes"}, args...)...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	out, errOut, code := run("call", "testserver.echo", "message=allowed")
	if code != 0 || strings.TrimSpace(out) != "allowed" {
		t.Fatalf("allowed call: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = run("call", "testserver.fail", "message=boom")
	if code != 4 {
		t.Fatalf("denied call: exit %d, want 4\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{"no-destructive", "testserver.fail"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("denial does not mention %q:\n%s", want, errOut)
		}
	}
	// A tampered module never runs: the checksum is checked before loading.
	if err := os.WriteFile(wasmPath, append([]byte("\x00asm\x01\x00\x00\x00"), 0), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = run("call", "testserver.echo", "message=x")
	if code != 2 || !strings.Contains(errOut, "no-destructive") {
		t.Fatalf("tampered filter: exit %d\n%s", code, errOut)
	}
}

// TestCallRunsRegoFilters: Rego policies compiled by OPA, as a policy and
// as a sanitizer, in the chain of `nexus call`.
func TestCallRunsRegoFilters(t *testing.T) {
	bundle := filtertest.BuildRego(t, `package t

import rego.v1

deny contains sprintf("%s is off limits", [input.tool.name]) if input.tool.name == data.blocked

redact := {"action": "modify", "result": object.union(input.result, {"content": [{"type": "text", "text": replace(input.result.content[0].text, "secret", "******")}]})} if {
	contains(input.result.content[0].text, "secret")
} else := {"action": "allow"}
`, "t/deny", "t/redact")
	dir := t.TempDir()
	cfg := `
server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

filter "rego-deny" {
  kind       = "policy"
  wasm       = "` + bundle + `"
  entrypoint = "t/deny"
  config     = { blocked = "fail" }
}

filter "rego-redact" {
  kind       = "sanitizer"
  wasm       = "` + bundle + `"
  entrypoint = "t/redact"
}
`
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "XDG_CACHE_HOME=" + filepath.Join(filtertest.Dir(), "cli-cache")}
	out, errOut, code := nexusIn(t, dir, "", env, "--config", filepath.Join(dir, "nexus.hcl"), "--yes", "call", "testserver.echo", "message=the secret word")
	if code != 0 || strings.TrimSpace(out) != "the ****** word" {
		t.Fatalf("sanitized call: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = nexusIn(t, dir, "", env, "--config", filepath.Join(dir, "nexus.hcl"), "--yes", "call", "testserver.fail", "message=boom")
	if code != 4 || !strings.Contains(errOut, "rego-deny") || !strings.Contains(errOut, "fail is off limits") {
		t.Fatalf("denied call: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}

// TestCallRunsRules: CEL rules from the config in the chain of `nexus
// call`: a deny, a modify of the arguments, an agent's own rule, a shadow
// rule that only records, and explain showing where a rule is written.
func TestCallRunsRules(t *testing.T) {
	dir := t.TempDir()
	cfg := `
server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

rule "no-fail" {
  when   = "tool.name == 'fail'"
  action = "deny"
  reason = "fail is not for agents"
}

rule "rewrite" {
  when   = "tool.name == 'echo' && args.message == 'draft'"
  action = "modify"
  set    = { "arguments.message" = "'final: ' + args.message" }
}

rule "would-block-long" {
  when   = "size(args.message) > 20"
  action = "deny"
  mode   = "shadow"
}

agent "ci" {
  permission = "yolo"
  rule "quiet" {
    when   = "args.message.contains('loud')"
    action = "deny"
    reason = "ci keeps it down"
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, string, int) {
		return nexusIn(t, dir, "", nil, append([]string{"--config", filepath.Join(dir, "nexus.hcl"), "--yes"}, args...)...)
	}
	if out, errOut, code := run("call", "testserver.echo", "message=draft"); code != 0 || strings.TrimSpace(out) != "final: draft" {
		t.Fatalf("modify: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := run("call", "testserver.fail", "message=x"); code != 4 || !strings.Contains(errOut, "fail is not for agents") {
		t.Fatalf("deny: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := run("call", "testserver.echo", "message=a loud but long enough message"); code != 0 || !strings.Contains(out, "loud") {
		t.Fatalf("shadow rule and another agent's rule must not stop the cli's call: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := run("--agent", "ci", "call", "testserver.echo", "message=loud"); code != 4 || !strings.Contains(errOut, "ci keeps it down") {
		t.Fatalf("agent rule: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := run("explain", "testserver.fail", "message=x")
	if code != 4 || !strings.Contains(out, "no-fail") || !strings.Contains(out, "nexus.hcl:9") {
		t.Fatalf("explain: exit %d\n%s\n%s", code, out, errOut)
	}
}
