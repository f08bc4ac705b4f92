package engine_test

import (
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/lock"
)

// The decision feed (Host.Feed: the console's live stream) gets the
// records the audit log gets, with no audit log configured too, while it
// has a subscriber: a call's, with its steps and latency, and a
// listing's tool the lockfile withholds.
func TestFeedSeesDecisions(t *testing.T) {
	w := newWorld()
	w.server("fs", echoTool("read"), echoTool("new"))
	pinned, err := lock.Pin("fs", mcp.Implementation{}, []mcp.Tool{echoTool("read")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &lock.Lock{}
	l.Put(pinned)
	h := w.host(t, yolo, engine.Options{Lock: l})
	feed := h.Feed()

	ok(t, h, "y", "fs.read", hi) // nobody watches yet: nothing is made for the feed
	sub := feed.Subscribe(16)
	defer sub.Close()
	if _, err := h.Tools(ctx, "y"); err != nil {
		t.Fatal(err)
	}
	ok(t, h, "y", "fs.read", hi)
	var got []audit.Decision
	for len(sub.C) > 0 {
		got = append(got, <-sub.C)
	}
	if len(got) != 2 {
		t.Fatalf("feed got %d decisions, want 2 (the withheld tool, the call): %+v", len(got), got)
	}
	if d := got[0]; d.Method != "tools/list" || d.Tool != "new" || d.Decision != "deny" || d.Link != "lock" {
		t.Errorf("the withheld tool: %+v", d.Record)
	}
	if d := got[1]; d.Method != "tools/call" || d.Server != "fs" || d.Tool != "read" || d.Decision != "allow" || len(d.Steps) == 0 || d.Latency <= 0 || d.ID == 0 {
		t.Errorf("the call: %+v latency %v id %d", d.Record, d.Latency, d.ID)
	}
}
