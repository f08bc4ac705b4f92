package bounded

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile makes the directory, writes the file readable by its owner
// only, replaces it whole, and leaves no temporary file behind.
func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "trust.json")
	for _, want := range []string{"first\n", "second, longer\n"} {
		if err := WriteFile(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}
