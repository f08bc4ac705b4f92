package arch

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// TestExtensionsBuildOutside copies examples/, filters/ and plugins/ into a
// module of their own, beside this checkout in a Go workspace (as the
// templates' READMEs tell an author to), and has go vet type-check every
// package there, tests included: what TestDependencyRules says of their
// imports, shown by the compiler a copy meets. An import of internal/ is
// "use of internal package ... not allowed" here.
func TestExtensionsBuildOutside(t *testing.T) {
	root := testenv.Root(t)
	dir := t.TempDir()
	for _, top := range []string{"examples", "filters", "plugins"} {
		copyTree(t, filepath.Join(root, top), filepath.Join(dir, top))
	}
	// The deadline starts after the copy; it bounds a hang: go vet of
	// every extension takes seconds, on a loaded machine a minute or two.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		// A workspace of the caller's, or -mod=mod (which a workspace
		// refuses), would not be the author's setup.
		return strings.HasPrefix(kv, "GOWORK=") || strings.HasPrefix(kv, "GOFLAGS=")
	})
	for _, args := range [][]string{
		{"mod", "init", "example.com/copies"},
		{"work", "init", ".", root},
		{"vet", "./..."},
	} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in a copy of the extensions (%s): %v\n%s", strings.Join(args, " "), dir, err, out)
		}
	}
}

// copyTree copies the regular files under src to dst, but node_modules
// (an npm install's; the tests' own lookups say where else they look).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir() && d.Name() == "node_modules":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
