package filtertest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// prune deletes old files only once the directory is over its size, and
// never young ones (another test process may be using them).
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int, age time.Duration) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Now().Add(-age)
		os.Chtimes(p, when, when)
		return p
	}
	old := write("cache/a/old", 600, 2*time.Hour)
	young := write("bin/b/young", 600, 0)
	prune(dir, 2000, time.Hour)
	for _, p := range []string{old, young} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("under the limit, %s was removed", p)
		}
	}
	prune(dir, 1000, time.Hour)
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Error("over the limit, an old file stayed")
	}
	if _, err := os.Stat(young); err != nil {
		t.Error("a young file was removed")
	}
}
