package host_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nexus-mcp/nexus/host"
)

// Relock pins what the servers offer, ReadLockFile reads it back, a check
// against it finds nothing, and a host given it enforces it.
func TestRelock(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}}}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "nexus.lock.hcl")
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()

	r, err := h.Relock(ctx, host.LockOptions{Agent: host.CLIAgent, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if r.Servers != 1 || len(r.Changes) != 1 || r.Changes[0].Kind != "server" || r.Changes[0].String() != "server ts: not in the lockfile" {
		t.Fatalf("first pin: %+v", r)
	}
	pinned, err := host.ReadLockFile(path)
	if err != nil || !slices.Equal(pinned.Servers(), []string{"ts"}) {
		t.Fatalf("read back: %v %v", pinned.Servers(), err)
	}
	r, err = h.Relock(ctx, host.LockOptions{Agent: host.CLIAgent, Path: path, Pinned: pinned, Check: true})
	if err != nil || len(r.Changes) != 0 {
		t.Fatalf("check: %+v %v", r, err)
	}
	if _, err := h.Relock(ctx, host.LockOptions{Path: path, Server: "gh"}); !errors.As(err, new(*host.UnknownServerError)) {
		t.Errorf("unknown server: %v", err)
	}

	// Enforced: every tool is pinned, so both are listed.
	h.SetLock(pinned)
	if h.Lockfile() == nil {
		t.Fatal("SetLock did not take")
	}
	tools, err := h.Tools(ctx, host.CLIAgent)
	if err != nil || len(tools) != 2 {
		t.Fatalf("tools under the lock: %v %v", tools, err)
	}
	h.SetLock(nil)
	if h.Lockfile() != nil {
		t.Error("SetLock(nil) left a lockfile")
	}
}
