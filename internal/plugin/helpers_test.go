package plugin

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

var (
	binOnce sync.Once
	bin     string // the test plugin, shared by the checkout's test processes
	binDir  string // this process's links to it, one per mode
	binErr  error
)

func TestMain(m *testing.M) {
	// The test plugin is built once, before any test's deadline starts.
	buildTestPlugin()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildTestPlugin builds internal/testplugin, once.
func buildTestPlugin() {
	binOnce.Do(func() {
		// As plugintest.Build and make plugins build plugins (see
		// plugintest.BuildFlags), which this package cannot import.
		bin, binErr = testenv.Build(testenv.RootDir(), "./internal/plugin/internal/testplugin", "testplugin",
			[]string{"-trimpath", "-tags", "grpcnotrace", "-ldflags=-s -w"}, []string{"CGO_ENABLED=0"})
		if binErr == nil {
			// The links, and what the plugin records beside itself
			// (counted.launches, spawner.children), are this process's.
			binDir, binErr = os.MkdirTemp("", "nexus-testplugin-")
		}
	})
}

// testPlugin returns the path of a link to the test plugin named mode,
// which picks its behaviour.
func testPlugin(t testing.TB, mode string) string {
	t.Helper()
	buildTestPlugin()
	if binErr != nil {
		t.Fatal(binErr)
	}
	p := filepath.Join(binDir, mode)
	if _, err := os.Lstat(p); err != nil {
		if err := os.Symlink(bin, p); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	return p
}

// pinned is a plugin block for path with its real checksum.
func pinned(t testing.TB, name, path string) *config.Plugin {
	t.Helper()
	sum, err := fileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return &config.Plugin{Name: name, Path: path, SHA256: sum, Source: diag.Source{File: "/work/nexus.hcl", Layer: "project", Line: 3}}
}

// newManager makes a manager whose logs go to the returned buffer, closed
// when the test ends.
func newManager(t testing.TB, o Options) (*Manager, *testenv.Buffer) {
	t.Helper()
	var buf testenv.Buffer
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "nexus", Output: &buf, Level: hclog.Debug})
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 10 * time.Second
	}
	empty := ""
	if o.Reattach == nil {
		o.Reattach = &empty
	}
	m := NewManager(o)
	t.Cleanup(func() { m.Close() })
	return m, &buf
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
