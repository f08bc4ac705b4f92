package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/taskfake"
)

// runTaskFake serves taskfake over stdio (NEXUS_HOST_FAKE=tasks),
// recording each tasks/cancel in NEXUS_FAKE_STATE.
func runTaskFake() int {
	f := &taskfake.Server{OnCancel: func(id string) {
		if state := os.Getenv("NEXUS_FAKE_STATE"); state != "" {
			os.WriteFile(state, []byte("cancelled "+id), 0o600)
		}
	}}
	// hostFake made a StdioConn already: a second one must work too.
	p := mcp.NewPeer(mcp.StdioConn(), mcp.PeerOptions{Handler: f})
	p.Start()
	<-p.Done()
	return 0
}

// A tool its server runs only as a task is called as one: created,
// polled with tasks/get, its result fetched with tasks/result; the caller
// sees an ordinary result. A caller that gives up cancels the task.
func TestTaskRequiredTool(t *testing.T) {
	state := filepath.Join(t.TempDir(), "cancelled")
	h := stdioHost(t, map[string]string{"fake": fakeEntry(t, "tasks", map[string]string{"NEXUS_FAKE_STATE": state}, "")}, engine.Options{})
	if got := ok(t, h, "y", "mcp_fake_job", map[string]any{"n": 7}); got != `job done {"n":7}` {
		t.Fatalf("job: %q", got)
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := h.CallTool(cctx, "y", "mcp_fake_forever", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forever: %v, want the caller's deadline", err)
	}
	waitFor(t, "the task to be cancelled upstream", func() bool {
		b, _ := os.ReadFile(state)
		return strings.HasPrefix(string(b), "cancelled task-")
	})
}
