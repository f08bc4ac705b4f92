package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// TestAuditVerify: nexus audit verify passes an intact log (rotated files
// too) and names the first broken record of an edited one.
func TestAuditVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nexus-audit.jsonl")
	w, err := audit.Open(audit.Options{Path: path, MaxBytes: 800, Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		w.Write(audit.Record{Time: time.Unix(1_800_000_000, 0), Agent: "claude", Server: "github", Method: "tools/call", Tool: "get_issue", Decision: "allow", Reason: strings.Repeat("r", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, _ := os.ReadFile(path + ".1")
	os.WriteFile(filepath.Join(dir, "edited.jsonl"), []byte(strings.Replace(string(b), `"decision":"allow"`, `"decision":"deny"`, 1)), 0o600)
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"audit_verify", []string{"audit", "verify", "nexus-audit.jsonl.2", "nexus-audit.jsonl.1", "nexus-audit.jsonl"}, 0},
		{"audit_verify_json", []string{"-o", "json", "audit", "verify", "nexus-audit.jsonl.1", "nexus-audit.jsonl"}, 0},
		{"audit_verify_edited", []string{"audit", "verify", "edited.jsonl"}, 1},
		{"audit_verify_order", []string{"audit", "verify", "nexus-audit.jsonl", "nexus-audit.jsonl.1"}, 1},
		{"audit_verify_missing", []string{"audit", "verify", "nope.jsonl"}, 3},
		{"audit_no_verb", []string{"audit"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := nexusIn(t, dir, "", nil, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			golden(t, c.name, "--- stdout\n"+stdout+"--- stderr\n"+stderr)
		})
	}
}

// The CLI records its calls in the audit block's log: allowed, failed
// and denied; the log verifies.
func TestAuditFromCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := cliTestConfig(`
agent "cli" {
  permission = "yolo"
  deny       = ["testserver.add"]
}

audit {
  path = "audit.jsonl"
}
`)
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"call", "testserver.echo", "message=hi"}, 0},
		{[]string{"call", "testserver.fail"}, 1},
		{[]string{"call", "testserver.add", "a=1", "b=2"}, 4},
	} {
		if stdout, stderr, code := nexusIn(t, dir, "", nil, c.args...); code != c.code {
			t.Fatalf("%v: exit %d, want %d\n%s%s", c.args, code, c.code, stdout, stderr)
		}
	}
	rep, err := audit.Verify(filepath.Join(dir, "audit.jsonl"))
	if err != nil || rep.Records != 3 {
		t.Fatalf("%+v %v", rep, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	for _, want := range []string{`"tool":"echo","decision":"allow"`, `"tool":"fail","decision":"allow"`, `"is_error":true`, `"tool":"add","decision":"deny","link":"rules"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the log lacks %s:\n%s", want, b)
		}
	}
}

// cliTestConfig is an HCL config with the test server (run as nexus
// testserver) and more blocks.
func cliTestConfig(more string) string {
	return `server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}
` + more
}

// nexus serve opens the audit log at start: one that cannot be written
// stops it at once, saying why, rather than at the first call.
func TestServeAuditUnwritable(t *testing.T) {
	dir := t.TempDir()
	cfg := cliTestConfig(`
agent "cli" {
  permission = "yolo"
}

audit {
  path = "no-such-dir/audit.jsonl"
}
`)
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := nexusIn(t, dir, "", nil, "serve", "--agent", "cli")
	if code != 2 || !strings.Contains(stderr, "the audit log cannot be opened") || !strings.Contains(stderr, "no-such-dir") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
}
