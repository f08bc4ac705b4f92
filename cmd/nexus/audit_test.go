package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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
			golden(t, c.name, volatile.ReplaceAllString("--- stdout\n"+stdout+"--- stderr\n"+stderr, "X"))
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

// keyedLog writes, in its own directory with an audit block naming keys
// from sensitive variables, a log of n records closed (so a checkpoint
// covers them) and then more records by a writer without the signing key
// (not covered); it returns the directory and the environment with the
// keys.
func keyedLog(t *testing.T, n, more int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	key, signing, _, err := audit.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	cfg := `variable "audit_key" {
  sensitive = true
}
variable "audit_signing_key" {
  sensitive = true
}
audit {
  path             = "audit.jsonl"
  key              = var.audit_key
  signing_key      = var.audit_signing_key
  checkpoint_every = 5
}
`
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AUDIT_KEY=" + key, "AUDIT_SIGNING_KEY=" + signing}
	keys, err := audit.KeySource{Key: key, SigningKey: signing}.Load()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	write := func(k audit.Keys, from, n int) {
		w, err := audit.Open(audit.Options{Path: path, Keys: k, CheckpointEvery: 5})
		if err != nil {
			t.Fatal(err)
		}
		for i := from; i < from+n; i++ {
			r := audit.Record{Time: time.Unix(1_800_000_000, 0), Agent: "claude", Server: "github", Method: "tools/call", Tool: "delete_repo", Decision: "allow"}
			if i == 3 {
				r.Decision, r.Link = "deny", "no-destructive"
			}
			w.Write(r)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(keys, 0, n)
	if more > 0 {
		write(audit.Keys{MAC: keys.MAC}, n, more)
	}
	return dir, env
}

// volatile is what differs from run to run in verify's text: times of
// signing, hashes, key ids.
var volatile = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z|[0-9a-f]{16}(…)?`)

// The attacks of the outside test, through nexus audit verify with the
// keys and checkpoint file found from the config in force: each is a
// break (exit 1) saying what the signed checkpoint or the keyed chain
// expected and what that means. The old verify passed every one.
func TestAuditVerifyKeyed(t *testing.T) {
	for _, c := range []struct {
		name   string
		attack func(t *testing.T, path string)
		noKey  bool
		code   int
	}{
		{"audit_verify_keyed", nil, false, 0},
		{"audit_verify_cut", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			ls := strings.SplitAfter(string(b), "\n")
			os.WriteFile(p, []byte(strings.Join(ls[:len(ls)-5], "")), 0o600) // the 3 uncovered and 1 covered (and "")
		}, false, 1},
		{"audit_verify_flipped", func(t *testing.T, p string) {
			// deny to allow, and every later link recomputed as the old
			// chain's plain sha256: all an attacker without the key can do.
			b, _ := os.ReadFile(p)
			ls := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			for i := 3; i < len(ls); i++ {
				var r audit.Record
				json.Unmarshal([]byte(ls[i]), &r)
				if i == 3 {
					r.Decision, r.Link = "allow", ""
				}
				sum := sha256.Sum256([]byte(ls[i-1]))
				r.MAC, r.Prev = "", hex.EncodeToString(sum[:])
				line, _ := json.Marshal(r)
				ls[i] = string(line)
			}
			os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o600)
		}, false, 1},
		{"audit_verify_nokey", nil, true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, env := keyedLog(t, 10, 3)
			if c.attack != nil {
				c.attack(t, filepath.Join(dir, "audit.jsonl"))
			}
			if c.noKey {
				env = nil
				os.Remove(filepath.Join(dir, "nexus.hcl"))
			}
			stdout, stderr, code := nexusIn(t, dir, "", env, "audit", "verify", "audit.jsonl")
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			golden(t, c.name, volatile.ReplaceAllString("--- stdout\n"+stdout+"--- stderr\n"+stderr, "X"))
		})
	}
}

// keygen prints keys that load: the HMAC key, the signing key, and the
// public key that is the signing key's.
func TestAuditKeygen(t *testing.T) {
	dir := t.TempDir()
	stdout, stderr, code := nexusIn(t, dir, "", nil, "-o", "json", "audit", "keygen")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var k struct{ Key, SigningKey, PublicKey string }
	var m map[string]string
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatal(err)
	}
	k.Key, k.SigningKey, k.PublicKey = m["key"], m["signing_key"], m["public_key"]
	keys, err := audit.KeySource{Key: k.Key, SigningKey: k.SigningKey, PublicKey: k.PublicKey}.Load()
	if err != nil || len(keys.MAC) != 64 || keys.Sign == nil {
		t.Fatalf("%s: %v", stdout, err)
	}
	stdout, _, code = nexusIn(t, dir, "", nil, "audit", "keygen")
	if code != 0 || !regexp.MustCompile(`(?m)^NEXUS_AUDIT_KEY=[0-9a-f]{64}\nNEXUS_AUDIT_SIGNING_KEY=\S{44}\n`).MatchString(stdout) {
		t.Errorf("keygen:\n%s", stdout)
	}
}
