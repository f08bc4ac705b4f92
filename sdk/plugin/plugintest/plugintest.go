package plugintest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	hostconfig "github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// BuildFlags and BuildEnv are how Build, and make plugins, build a plugin:
//
//	CGO_ENABLED=0 go build -trimpath -tags grpcnotrace -ldflags="-s -w"
//
// The host hashes the whole binary before every launch (sha256, ~5 ms per
// MB on a CPU without SHA extensions), so its size is launch time:
// stripped (-s -w) it is a third smaller than by default; grpcnotrace drops
// gRPC's x/net/trace debug pages, which a plugin never serves (4% more);
// CGO_ENABLED=0 links it statically, so it starts without the dynamic
// loader. -trimpath makes the same source give the same checksum on any
// machine.
var (
	BuildFlags = []string{"-trimpath", "-tags", "grpcnotrace", "-ldflags=-s -w"}
	BuildEnv   = []string{"CGO_ENABLED=0"}
)

// Build runs go build on the main package in dir (a path relative to the
// test's working directory, usually "."), with BuildFlags and BuildEnv,
// and returns the binary's path. One link serves every test process of
// the checkout (the binary lives in the repository's bin/testbuild, and
// later builds find it up to date); a test that changes the binary
// copies it first.
func Build(t testing.TB, dir string) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := testenv.Build(abs, ".", filepath.Base(abs), BuildFlags, BuildEnv)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Cleanup is kept for TestMains that call it: Build's binaries stay for
// the next process and the next run.
func Cleanup() {}

// Pinned is a plugin block for the binary at path with its real sha256.
func Pinned(t testing.TB, name, path string) *hostconfig.Plugin {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return &hostconfig.Plugin{Name: name, Path: path, SHA256: hex.EncodeToString(h.Sum(nil)),
		Source: diag.Source{File: "nexus.hcl", Layer: "project", Line: 1}}
}

// Manager returns a Manager for the test, logging to t.Log, closed at the
// end of the test.
func Manager(t testing.TB) *plugin.Manager {
	t.Helper()
	empty := ""
	m := plugin.NewManager(plugin.Options{
		Logger:       hclog.New(&hclog.LoggerOptions{Name: "nexus", Output: testWriter{t}, Level: hclog.Info}),
		StartTimeout: 20 * time.Second,
		Reattach:     &empty,
	})
	t.Cleanup(func() { m.Close() })
	return m
}

// Open builds the plugin in dir and opens it as a plugin block named name.
func Open(t testing.TB, dir, name string) (*plugin.Manager, *plugin.Plugin, *hostconfig.Plugin) {
	t.Helper()
	m := Manager(t)
	pc := Pinned(t, name, Build(t, dir))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := m.Open(ctx, pc)
	if err != nil {
		t.Fatal(explain.Error(err))
	}
	return m, p, pc
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(string(p))
	return len(p), nil
}

// Server is a server block that uses a transport plugin.
func Server(name, pluginName string, cfg map[string]any) *hostconfig.Server {
	return &hostconfig.Server{Name: name, Type: hostconfig.TypePlugin, Plugin: &hostconfig.PluginTransport{Name: pluginName, Config: cfg},
		Source: diag.Source{File: "nexus.hcl", Layer: "project", Line: 10}, Enabled: true}
}

// Handler is a filter the host opened from a plugin: Handle runs one event
// through the plugin binary as Nexus does, over its gRPC connection.
type Handler interface {
	Handle(ctx context.Context, e *event.Event) (event.Decision, error)
}

// ConfigError is what Filter returns when the plugin refuses its config
// (its schema or its own check): errors.As finds it.
type ConfigError = plugin.ConfigError

// Filter builds the plugin's main package in dir (once per test process),
// pins it and opens it as the host opens a filter block: kind is "policy"
// or "sanitizer", config is the block's config. The config is checked
// against the plugin's schema and the plugin configures an instance now,
// so a bad config fails here, with a *ConfigError. The plugin stops when
// the test ends.
func Filter(t testing.TB, dir, kind string, config map[string]any) (Handler, error) {
	t.Helper()
	m := Manager(t)
	cfg := &hostconfig.Config{Plugins: []*hostconfig.Plugin{Pinned(t, "plugin", Build(t, dir))}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := m.Filter(ctx, cfg, &hostconfig.Filter{Name: "test", Kind: kind, Plugin: "plugin", Config: config})
	if err != nil {
		return nil, explain.Error(err) // the report the host shows, the *ConfigError its Cause
	}
	return l, nil
}
