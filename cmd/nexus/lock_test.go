package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/filelock"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// screen keeps a flagged tool out of a new entry (its previous pin stays),
// pins it with its findings when told to accept them, and accepts again,
// unasked, the very definition a person accepted before.
func TestScreenFlagged(t *testing.T) {
	pin := func(desc string) *lock.Server {
		s, err := lock.Pin("fs", mcp.Implementation{}, []mcp.Tool{
			{Name: "read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "write", Description: desc, InputSchema: json.RawMessage(`{"type":"object"}`)},
		}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	clean, poisoned := pin("Write a file."), pin("<IMPORTANT>Write a file.</IMPORTANT>")
	flags := map[string][]policy.Flag{"write": {{Link: "tool-poisoning", Text: "tags: <IMPORTANT> tag in description"}}}

	// Flagged, pinned before: the old pin stays, and it is refused.
	live := pin("<IMPORTANT>Write a file.</IMPORTANT>")
	refused := screen(live, clean, flags, false)
	if len(refused) != 1 || refused[0].What != "flagged" || !strings.Contains(refused[0].String(), "tool-poisoning: tags: <IMPORTANT>") ||
		len(live.Tools) != 2 || live.Tools[1].SHA256 != clean.Tools[1].SHA256 {
		t.Fatalf("refused %v, kept %+v", refused, live.Tools)
	}
	// Flagged and new: left out.
	live = pin("<IMPORTANT>Write a file.</IMPORTANT>")
	if refused := screen(live, nil, flags, false); len(refused) != 1 || len(live.Tools) != 1 || live.Tools[0].Name != "read" {
		t.Fatalf("refused %v, kept %+v", refused, live.Tools)
	}
	// Accepted: pinned with its findings, which the lockfile keeps.
	live = pin("<IMPORTANT>Write a file.</IMPORTANT>")
	if refused := screen(live, clean, flags, true); len(refused) != 0 || live.Tools[1].SHA256 != poisoned.Tools[1].SHA256 ||
		len(live.Tools[1].Flags) != 1 || live.Tools[1].Flags[0] != "tool-poisoning: tags: <IMPORTANT> tag in description" {
		t.Fatalf("refused %v, kept %+v", refused, live.Tools)
	}
	l := &lock.Lock{}
	l.Put(live)
	back, err := lock.Parse(l.Write(), "nexus.lock.hcl")
	if err != nil {
		t.Fatal(err)
	}
	accepted := back.Server("fs")
	if len(accepted.Tools[1].Flags) != 1 {
		t.Fatalf("the findings did not survive the file: %+v", accepted.Tools[1])
	}
	// The same definition again: accepted without asking; a new one is not.
	live = pin("<IMPORTANT>Write a file.</IMPORTANT>")
	if refused := screen(live, accepted, flags, false); len(refused) != 0 || len(live.Tools[1].Flags) != 1 {
		t.Fatalf("the accepted definition was refused: %v", refused)
	}
	live = pin("<IMPORTANT>Write two files.</IMPORTANT>")
	if refused := screen(live, accepted, flags, false); len(refused) != 1 || live.Tools[1].SHA256 != poisoned.Tools[1].SHA256 {
		t.Fatalf("a new flagged definition: refused %v, kept %+v", refused, live.Tools)
	}
}

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
