package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/filelock"
)

// With filters/tool-poisoning in the chain, a poisoned tool is withheld
// from nexus tools and refused on call; nexus lock does not pin it and
// exits 1 with the findings; --accept-flagged pins it with them, and then
// the same definition is pinned again unasked.
func TestLockPoisoned(t *testing.T) {
	wasmPath, sum := buildFilter(t, "tool-poisoning")
	dir := t.TempDir()
	write := func(variant string) {
		cfg := `
server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver", "--variant", "` + variant + `"]
  }
}

filter "tool-poisoning" {
  kind   = "policy"
  wasm   = "` + wasmPath + `"
  sha256 = "` + sum + `"
  match { methods = ["tools/list"] }
}
`
		if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("changed")
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock"); code != 0 {
		t.Fatalf("lock of a clean server: exit %d\n%s", code, stderr)
	}
	write("poisoned")
	stdout, stderr, code := nexusIn(t, dir, "", nil, "tools")
	if code != 0 || strings.Contains(stdout, "testserver.echo") || !strings.Contains(stdout, "testserver.add") {
		t.Errorf("tools with a poisoned echo: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "--yes", "call", "testserver.echo", "message=hi"); code != 4 || !strings.Contains(stderr, "withheld by the lockfile") || !strings.Contains(stderr, "nexus lock --check") || strings.Contains(stderr, "nexus filter test") {
		t.Errorf("a call of the poisoned echo: exit %d\n%s", code, stderr)
	}
	stdout, _, code = nexusIn(t, dir, "", nil, "lock")
	for _, want := range []string{"Not pinned, as flagged", "tool testserver.echo: flagged", "tool-poisoning: tags: <IMPORTANT> tag in description", "--accept-flagged"} {
		if code != 1 || !strings.Contains(stdout, want) {
			t.Errorf("lock of a poisoned server: exit %d, want %q in\n%s", code, want, stdout)
		}
	}
	lockfile := filepath.Join(dir, "nexus.lock.hcl")
	b, _ := os.ReadFile(lockfile)
	if strings.Contains(string(b), "IMPORTANT") || !strings.Contains(string(b), "Messages are trimmed.") {
		t.Errorf("the refused definition was pinned, or the earlier pin lost:\n%s", b)
	}
	if stdout, _, code := nexusIn(t, dir, "", nil, "lock", "--check"); code != 1 || !strings.Contains(stdout, "flagged") {
		t.Errorf("check of a flagged tool: exit %d\n%s", code, stdout)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock", "--accept-flagged"); code != 0 {
		t.Fatalf("lock --accept-flagged: exit %d\n%s", code, stderr)
	}
	b, _ = os.ReadFile(lockfile)
	if !strings.Contains(string(b), "flags") || !strings.Contains(string(b), "tool-poisoning: tags: <IMPORTANT> tag in description") {
		t.Errorf("the accepted findings are not in the lockfile:\n%s", b)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock"); code != 0 {
		t.Errorf("lock of the accepted definition: exit %d\n%s", code, stderr)
	}
	if _, _, code := nexusIn(t, dir, "", nil, "lock", "--check"); code != 0 {
		t.Errorf("check of the accepted definition: exit %d", code)
	}
}

// nexus lock writes under the lockfile's file lock, as the console's
// accept and reject do: what another process pinned while it talked to
// the servers (here a server the config does not have, which --server
// leaves alone) is kept, not overwritten by the lockfile it read first.
func TestLockUnderFileLock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the waiting process through /proc")
	}
	dir := t.TempDir()
	hcl := "server \"testserver\" {\n  stdio {\n    command = \"nexus\"\n    args    = [\"testserver\"]\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := nexusIn(t, dir, "", nil, "lock"); code != 0 {
		t.Fatalf("lock: exit %d\n%s", code, stderr)
	}
	lockfile := filepath.Join(dir, "nexus.lock.hcl")
	held := filepath.Join(dir, ".nexus.lock.hcl.lock")
	// The bound starts after the setup above; generous for a loaded box.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	release, err := filelock.Hold(ctx, held)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() {
		_, stderr, code := nexusIn(t, dir, "", nil, "lock", "--server", "testserver")
		done <- fmt.Sprintf("exit %d %s", code, stderr)
	}()
	// Once nexus lock has the lock file open it has read the lockfile and
	// waits for the lock: another process pins meanwhile.
	for !openedByOther(held) {
		select {
		case out := <-done:
			release()
			t.Fatalf("nexus lock finished without waiting for the file lock: %s", out)
		case <-ctx.Done():
			release()
			t.Fatal("nexus lock never opened the lockfile's file lock")
		case <-time.After(20 * time.Millisecond):
		}
	}
	b, err := os.ReadFile(lockfile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lockfile, append(b, []byte("\nserver \"other\" {\n}\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	release()
	select {
	case out := <-done:
		if !strings.HasPrefix(out, "exit 0 ") {
			t.Fatalf("lock --server: %s", out)
		}
	case <-ctx.Done():
		t.Fatal("nexus lock did not finish once the file lock was free")
	}
	if b, _ := os.ReadFile(lockfile); !strings.Contains(string(b), `server "other"`) || !strings.Contains(string(b), `server "testserver"`) {
		t.Errorf("the pin made while nexus lock waited is lost:\n%s", b)
	}
	if _, err := os.Stat(held); !os.IsNotExist(err) {
		t.Errorf("the file lock is left beside the lockfile: %v", err)
	}
}

// openedByOther reports whether a process other than this one has path
// open.
func openedByOther(path string) bool {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	self := fmt.Sprintf("/proc/%d/", os.Getpid())
	for _, fd := range fds {
		if strings.HasPrefix(fd, self) {
			continue
		}
		if l, err := os.Readlink(fd); err == nil && l == path {
			return true
		}
	}
	return false
}
