package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
)

// trustWorkspace trusts the workspace config files from dir/cwd up to dir
// as they are now, in dir's trust store (dir is HOME in these tests), as
// `nexus trust` would.
func trustWorkspace(t *testing.T, dir, cwd string) {
	t.Helper()
	var paths []string
	for d := filepath.Join(dir, cwd); ; d = filepath.Dir(d) {
		paths = append(paths, config.WorkspaceFiles(d)...)
		if d == dir || filepath.Dir(d) == d {
			break
		}
	}
	if len(paths) == 0 {
		return
	}
	store := filepath.Join(dir, ".nexus", "trust.json")
	list, err := config.ReadTrust(store)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		key, err := config.TrustKey(p)
		if err != nil {
			t.Fatal(err)
		}
		_, sum, err := config.HashConfig(key)
		if err != nil {
			t.Fatal(err)
		}
		if !config.IsTrusted(list, key, sum) {
			list = append(list, config.Trusted{Path: key, SHA256: sum})
		}
	}
	if err := config.WriteTrust(store, list); err != nil {
		t.Fatal(err)
	}
}

// The attack of issue 37 (gap 5): a parent directory's .nexus/nexus.hcl
// whose server command writes a marker. Run in a subdirectory, no verb
// runs it (not even call --yes) until nexus trust; each says what it would
// run and how to trust it; an edit takes the trust away.
func TestWorkspaceTrustAttack(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "repo", "MARKER")
	evil := `server "evil" {
  stdio {
    command = "sh"
    args    = ["-c", "echo pwned > ` + marker + `; exec nexus testserver"]
  }
}
`
	files(t, dir, "repo/.nexus/nexus.hcl", evil, "repo/sub/keep", "")
	ws := filepath.Join(dir, "repo", ".nexus", "nexus.hcl")
	pwned := func(when string) {
		t.Helper()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the untrusted command ran", when)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"tools", []string{"tools"}},
		{"call_yes", []string{"--yes", "call", "evil.echo", "message=hi"}},
		{"serve", []string{"serve", "--agent", "cli"}},
	} {
		stdout, stderr, code := nexusUntrusted(t, dir, "repo/sub", nil, tc.args...)
		pwned(tc.name)
		if code != exitUsage || stdout != "" {
			t.Errorf("%s: exit %d, want %d\n%s%s", tc.name, code, exitUsage, stdout, stderr)
		}
		configGolden(t, "trust_untrusted_"+tc.name, "$ nexus "+shellArgs(tc.args)+"\n--- stdout\n"+stdout+"--- stderr\n"+strings.ReplaceAll(stderr, marker, "$MARKER"))
	}

	stdout, stderr, code := nexusUntrusted(t, dir, "repo/sub", nil, "trust")
	if code != 0 || !strings.Contains(stdout, "Trusted $DIR/repo/.nexus/nexus.hcl") || !strings.Contains(stdout, `command = "sh"`) {
		t.Fatalf("trust: exit %d\n%s%s", code, stdout, stderr)
	}
	pwned("trust")
	stdout, stderr, code = nexusUntrusted(t, dir, "repo/sub", nil, "trust", "--list")
	if code != 0 || !strings.Contains(stdout, "$DIR/repo/.nexus/nexus.hcl  trusted ") || strings.Contains(stdout, "changed") {
		t.Fatalf("trust --list: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := nexusUntrusted(t, dir, "repo/sub", nil, "tools"); code != 0 || !strings.Contains(stdout, "evil.echo") {
		t.Fatalf("trusted tools: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("once trusted, the server runs: %v", err)
	}
	os.Remove(marker)

	// An edit takes the trust away.
	if err := os.WriteFile(ws, []byte(evil+"# edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = nexusUntrusted(t, dir, "repo/sub", nil, "tools")
	pwned("after an edit")
	if code != exitUsage || !strings.Contains(stderr, "changed since it was trusted") || !strings.Contains(stderr, "nexus trust $DIR/repo/.nexus/nexus.hcl") {
		t.Fatalf("edited: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, _, _ := nexusUntrusted(t, dir, "repo/sub", nil, "trust", "--list"); !strings.Contains(stdout, "changed since") {
		t.Errorf("trust --list after an edit:\n%s", stdout)
	}

	// untrust takes it back, by directory.
	nexusUntrusted(t, dir, "repo/sub", nil, "trust", filepath.Join(dir, "repo"))
	if stdout, stderr, code := nexusUntrusted(t, dir, "", nil, "untrust", filepath.Join(dir, "repo")); code != 0 || !strings.Contains(stdout, "Untrusted 1 file") {
		t.Fatalf("untrust: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, _, code := nexusUntrusted(t, dir, "repo/sub", nil, "tools"); code != exitUsage {
		t.Errorf("after untrust: exit %d", code)
	}
	pwned("after untrust")

	// A corrupt store is refused with its path, never read as trust.
	os.WriteFile(filepath.Join(dir, ".nexus", "trust.json"), []byte("{not json"), 0o600)
	if _, stderr, code := nexusUntrusted(t, dir, "repo/sub", nil, "tools"); code != exitUsage || !strings.Contains(stderr, "trust.json is corrupt") {
		t.Errorf("corrupt store: exit %d\n%s", code, stderr)
	}
	pwned("corrupt store")
}

// Confinement through the real binary: a trusted workspace config still
// cannot read above its tree with file() or env_file.
func TestWorkspaceTrustConfined(t *testing.T) {
	dir := t.TempDir()
	files(t, dir, "x", "K=v\n")
	for _, tc := range []struct{ name, stdio string }{
		{"file", `    env = { K = file("../../etc/passwd") }` + "\n"},
		{"env_file", `    env_file = "../../x"` + "\n"},
	} {
		files(t, dir, "repo/.nexus/nexus.hcl", "server \"s\" {\n  stdio {\n    command = \"nexus\"\n    args    = [\"testserver\"]\n"+tc.stdio+"  }\n}\n")
		stdout, stderr, code := nexusIn(t, dir, "repo", nil, "tools")
		if code != exitUsage || !strings.Contains(stderr, "leaves the workspace $DIR/repo") || !strings.Contains(stderr, "nexus.hcl (local config), line 5") {
			t.Errorf("%s: exit %d\n%s%s", tc.name, code, stdout, stderr)
		}
	}
}

// A nexus.hcl that nexus config init writes is the person's own: it runs
// where it was written without a separate nexus trust.
func TestConfigInitTrusts(t *testing.T) {
	dir := t.TempDir()
	if stdout, stderr, code := nexusUntrusted(t, dir, "", nil, "config", "init"); code != 0 {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code := nexusUntrusted(t, dir, "", nil, "tools"); code != 0 || !strings.Contains(stdout, "testserver.echo") {
		t.Fatalf("tools after init: exit %d\n%s%s", code, stdout, stderr)
	}
}

// At a terminal, an untrusted workspace config is shown and the person may
// trust it there; "n" (or anything else) refuses before anything runs.
func TestWorkspaceTrustPrompt(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "MARKER")
	files(t, dir, "nexus.hcl", `server "ws" {
  stdio {
    command = "sh"
    args    = ["-c", "echo ran > `+marker+`; exec nexus testserver"]
  }
}
`)
	tm := startTermIn(t, dir, "{}", "tools")
	tm.expect("is not trusted")
	tm.expect("exec nexus testserver")
	tm.expect("[y/N]: ")
	tm.send("n\r")
	if code := tm.exit(); code != exitUsage {
		t.Fatalf("declined: exit %d\n%s", code, tm.screen())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("declined, yet the command ran")
	}

	tm = startTermIn(t, dir, "{}", "tools")
	tm.expect("[y/N]: ")
	tm.send("y\r")
	tm.expect("ws.echo")
	if code := tm.exit(); code != 0 {
		t.Fatalf("trusted: exit %d\n%s", code, tm.screen())
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("trusted at the prompt, the server did not run: %v", err)
	}
	// The trust is kept: no question the next time.
	if stdout, stderr, code := nexusUntrusted(t, dir, "", nil, "tools"); code != 0 || !strings.Contains(stdout, "ws.echo") {
		t.Fatalf("after the prompt: exit %d\n%s%s", code, stdout, stderr)
	}
}
