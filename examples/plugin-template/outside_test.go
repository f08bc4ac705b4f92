package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/readmesh"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

// TestOutside runs the shell blocks of README.md marked
// "<!-- outside-test -->", as written, in a temporary folder outside the
// repository with NEXUS set to this checkout: it copies the template, makes
// it a module in a Go workspace, runs its tests there and builds it. Then it
// loads the binary the README's go build made through the host, as Nexus
// would. A README whose commands do not work fails here.
//
// (The copy's own outside_test.go is the one file the README removes: it
// uses this repository's internal packages.)
func TestOutside(t *testing.T) {
	sh := readmesh.New(t)
	sh.RunREADME("README.md")

	if _, err := os.Stat(filepath.Join(sh.Dir, "outside_test.go")); err == nil {
		t.Errorf("the copy in %s still has outside_test.go: the README should remove it", sh.Dir)
	}
	if len(sh.Builds) != 1 || sh.Builds[0].WASM {
		t.Fatalf("README.md's blocks should build one native binary, built %+v", sh.Builds)
	}
	bin := sh.Builds[0].Path
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("the binary the README builds: %v (mode %v)", err, fi)
	}

	// The deadline starts after the builds.
	m := plugintest.Manager(t)
	cfg := &config.Config{Plugins: []*config.Plugin{plugintest.Pinned(t, "mine", bin)}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pol, err := m.Filter(ctx, cfg, &config.Filter{Name: "no-deletes", Kind: "policy", Plugin: "mine",
		Config: map[string]any{"deny": []any{"github.delete_*"}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := pol.Handle(ctx, &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
		Server: event.Server{Name: "github"}, Tool: &event.Tool{Name: "delete_repo"}})
	if err != nil || d.Action != event.Deny {
		t.Fatalf("github.delete_repo through the built plugin: %+v %v", d, err)
	}
}
