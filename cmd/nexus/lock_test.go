package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
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
