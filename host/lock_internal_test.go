package host

import (
	"encoding/json"
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
