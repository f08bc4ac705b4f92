package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/internal/filelock"
)

// buildWait bounds how long a process waits for another to finish the
// same build: a cold link of nexus on a loaded 2-core machine takes a
// minute or two.
const buildWait = 15 * time.Minute

var (
	sharedMu sync.Mutex
	shared   = map[string]string{}
)

// Build runs `go build ARGS -o OUT PKG` in dir with env added to the
// environment, and returns OUT: a path that every test process of this
// checkout shares (bin/testbuild/KEY/NAME, KEY naming dir, pkg, args and
// env). Processes take turns under a file lock: the first links the
// binary, and for the others go finds the build ID of the file there up
// to date and returns in a second. Before, each package's tests linked its
// own nexus, plugins and WASM filters, minutes of CPU on a cold CI machine
// (issue 37). go decides whether the file is up to date from every input,
// so an edit between runs rebuilds it.
//
// The file is shared: a test that changes a binary copies it first.
// Outside a checkout (the test kits, plugintest and filtertest, in a
// plugin author's module, where this source is in the read-only module
// cache) the builds go to the user's cache directory instead (buildDir).
func Build(dir, pkg, name string, args, env []string) (string, error) {
	root := RootDir()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, s := range append(append([]string{abs, pkg, name}, args...), env...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil)[:8])

	sharedMu.Lock()
	defer sharedMu.Unlock()
	if p, ok := shared[key]; ok {
		return p, nil
	}
	base, err := buildDir(root)
	if err != nil {
		return "", err
	}
	outDir := filepath.Join(base, key)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildWait)
	defer cancel()
	lock, err := filelock.Acquire(ctx, filepath.Join(outDir, "lock"))
	if err != nil {
		return "", fmt.Errorf("waiting for another test process's build of %s: %w", pkg, err)
	}
	defer lock.Close()
	out := filepath.Join(outDir, name)
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, args...), "-o", out, pkg)...)
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s (in %s): %v\n%s", strings.Join(args, " "), pkg, abs, err, b)
	}
	shared[key] = out
	return out, nil
}

// buildDir is where Build links: bin/testbuild in the checkout at root,
// else, when that cannot be made (root is the module cache, read-only,
// or no directory at all), nexus/testbuild in the user's cache directory.
func buildDir(root string) (string, error) {
	if filepath.IsAbs(root) {
		d := filepath.Join(root, "bin", "testbuild")
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d, nil
		}
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testenv: no directory for test builds: %s is not writable (the nexus module cache?) and the user has no cache directory (%v); set XDG_CACHE_HOME or HOME", filepath.Join(root, "bin", "testbuild"), err)
	}
	d := filepath.Join(c, "nexus", "testbuild")
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("testenv: no directory for test builds: %w", err)
	}
	return d, nil
}
