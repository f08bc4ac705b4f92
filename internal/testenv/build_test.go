package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// Builds go to bin/testbuild in a checkout, and to the user's cache
// directory where the source cannot take them: the test kits in a
// plugin author's module find nexus's source in the read-only module
// cache. (A regular file stands in for a directory no one may write to:
// permissions do not stop root, which CI may be.)
func TestBuildDir(t *testing.T) {
	checkout := t.TempDir()
	if d, err := buildDir(checkout); err != nil || d != filepath.Join(checkout, "bin", "testbuild") {
		t.Fatalf("in a checkout: %q, %v", d, err)
	}
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	user, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(user, "nexus", "testbuild")
	for _, root := range []string{blocked, "github.com/nexus-mcp/nexus@v0.9.0", ""} {
		d, err := buildDir(root)
		if err != nil || d != want {
			t.Errorf("root %q: %q, %v; want %q", root, d, err, want)
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("root %q: %s was not made: %v", root, d, err)
		}
	}
}
