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

	"github.com/nexus-mcp/nexus/host/mcp"
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
// the checkout (the binary lives in the nexus checkout's bin/testbuild,
// or, where nexus is a dependency in the read-only module cache, in the
// user's cache directory under nexus/testbuild; later builds find it up
// to date); a test that changes the binary copies it first.
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

// pinned is a plugin block for the binary at path with its real sha256.
func pinned(t testing.TB, name, path string) *hostconfig.Plugin {
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

// manager returns a Manager for the test, logging to t.Log, closed at the
// end of the test (which stops its plugins).
func manager(t testing.TB) *plugin.Manager {
	t.Helper()
	empty := ""
	m := plugin.NewManager(plugin.Options{
		Logger:       hclog.New(&hclog.LoggerOptions{Name: "nexus", Output: testWriter{t}, Level: hclog.Info}),
		StartTimeout: startTimeout,
		Reattach:     &empty,
	})
	t.Cleanup(func() { m.Close() })
	return m
}

// startTimeout bounds a plugin's start (its handshake); it is generous,
// since a loaded machine starts processes slowly, and bounds a hang.
const startTimeout = 30 * time.Second

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(string(p))
	return len(p), nil
}

// Handler is a filter the host opened from a plugin: Handle runs one event
// through the plugin binary as Nexus does, over its gRPC connection.
type Handler interface {
	Handle(ctx context.Context, e *event.Event) (event.Decision, error)
}

// The errors a test tells apart with errors.As, beneath the report the
// host shows (what Plugin's methods and Filter return).
type (
	// ConfigError: the plugin refused a block's config (its schema or
	// its own check).
	ConfigError = plugin.ConfigError
	// OpenError: a transport plugin could not open a server's
	// connection (the plugin's own words say why).
	OpenError = plugin.OpenError
)

// Info is what a plugin binary says of itself when it starts: its name,
// version, kinds and config schemas.
type Info = plugin.Info

// Plugin is a plugin binary running as Nexus runs it: started by the
// host's plugin manager through go-plugin's handshake, from a plugin block
// (named as Start was told, at nexus.hcl line 1) pinned to the binary's
// sha256. Every filter and connection opened on it shares the one
// process; it stops when the test ends.
type Plugin struct {
	p *plugin.Plugin
}

// Start builds the plugin's main package in dir (Build) and starts it.
// The build comes first, so a test's deadline can start after Start.
func Start(t testing.TB, dir, name string) *Plugin {
	t.Helper()
	return StartBinary(t, Build(t, dir), name)
}

// StartBinary starts the plugin binary at path, built by other means (a
// README's go build, say).
func StartBinary(t testing.TB, path, name string) *Plugin {
	t.Helper()
	m := manager(t)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := m.Open(ctx, pinned(t, name, path))
	if err != nil {
		t.Fatal(explain.Error(err)) // the report the host shows
	}
	return &Plugin{p: p}
}

// Info is what the plugin said of itself at start.
func (p *Plugin) Info() Info { return p.p.Info() }

// Filter opens a filter block named name on the plugin: kind is "policy"
// or "sanitizer", config is the block's config. The config is checked
// against the plugin's schema and the plugin configures an instance now,
// so a bad config fails here, with the report the host shows (errors.As
// finds the *ConfigError). Each filter has its own instance in the one
// process.
func (p *Plugin) Filter(ctx context.Context, name, kind string, config map[string]any) (Handler, error) {
	l, err := p.p.Filter(ctx, &hostconfig.Filter{Name: name, Kind: kind, Plugin: p.p.Name(), Config: config,
		Source: diag.Source{File: "nexus.hcl", Layer: "project", Line: 10}})
	if err != nil {
		return nil, explain.Error(err)
	}
	return l, nil
}

// Dial opens a connection through a transport plugin, as the host does
// for a server block (named "remote", at nexus.hcl line 10) whose
// transport is the plugin with config: mcp.Connect speaks MCP over what
// it returns. A config the plugin's schema refuses, or a connection the
// plugin could not open, is the report the host shows, with the block's
// source; errors.As finds the *ConfigError or *OpenError beneath it.
func (p *Plugin) Dial(ctx context.Context, config map[string]any) (mcp.Conn, error) {
	tr, err := p.p.Transport(&hostconfig.Server{Name: "remote", Type: hostconfig.TypePlugin,
		Plugin:  &hostconfig.PluginTransport{Name: p.p.Name(), Config: config},
		Source:  diag.Source{File: "nexus.hcl", Layer: "project", Line: 10},
		Enabled: true})
	if err != nil {
		return nil, explain.Error(err)
	}
	conn, err := tr.Dial(ctx)
	if err != nil {
		return nil, explain.Error(err)
	}
	return conn, nil
}

// Filter builds the plugin's main package in dir (once per test process),
// starts it and opens it as the host opens a filter block named "test":
// Start, then Plugin.Filter. The plugin stops when the test ends.
func Filter(t testing.TB, dir, kind string, config map[string]any) (Handler, error) {
	t.Helper()
	p := Start(t, dir, "plugin")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	return p.Filter(ctx, "test", kind, config)
}
