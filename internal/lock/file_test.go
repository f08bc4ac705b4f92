package lock

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Update changes the file under its lock and writes it as Write renders
// it; changes made at once (two people accepting on two replicas) all
// land, none lost; neither WriteFile's temporary file nor the file lock
// is left behind.
func TestUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Pin("fs", mcp.Implementation{Name: "fs-server", Version: "1"}, tools("Write a file.", `{"type":"object"}`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := &Lock{}
	base.Put(s)
	if err := base.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := ToolItem(mcp.Tool{Name: "t" + string(rune('a'+i)), Description: "new", InputSchema: []byte(`{"type":"object"}`)})
			if err != nil {
				t.Error(err)
				return
			}
			it.Flags = []string{"poisoning: hidden instructions"}
			if _, err := Update(context.Background(), path, func(l *Lock) error { l.Server("fs").SetTool(it); return nil }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Server("fs").Tools); n != 2+8 {
		t.Errorf("%d tools pinned after 8 concurrent updates of 2: some were lost", n)
	}
	if it := got.Server("fs").Tool("tc"); it == nil || len(it.Flags) != 1 {
		t.Errorf("tool tc as read back: %+v", it)
	}
	b, _ := os.ReadFile(path)
	if string(b) != string(got.Write()) {
		t.Errorf("the file is not as Write renders it")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	for _, e := range entries {
		// The file lock too is removed after use (but on Windows, where
		// an open file cannot be removed).
		if e.Name() != FileName && (runtime.GOOS != "windows" || e.Name() != "."+FileName+".lock") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A watcher reports each change to the file's content once: one made
// before it started (against the lockfile in force), a rewrite, a broken
// file (an error, once), a removal; a file touched or written as it was
// is no change.
func TestWatcher(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, _ := Pin("fs", mcp.Implementation{}, tools("Write a file.", `{"type":"object"}`), nil, nil)
	inForce := &Lock{}
	inForce.Put(s)
	if err := inForce.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	w := newWatcher(path, inForce)
	if changed, _, _ := w.poll(); changed {
		t.Fatal("the file as it is in force was reported as a change")
	}

	next, _ := Pin("fs", mcp.Implementation{}, tools("Write a file, then say so.", `{"type":"object"}`), nil, nil)
	l2 := &Lock{}
	l2.Put(next)
	if err := l2.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	changed, l, err := w.poll()
	if !changed || err != nil || l.Server("fs").Tool("write").Description != "Write a file, then say so." {
		t.Fatalf("a rewrite: changed %v, %v, %+v", changed, err, l)
	}
	if changed, _, _ := w.poll(); changed {
		t.Error("one change was reported twice")
	}
	if err := l2.WriteFile(path); err != nil { // the same content, a new time
		t.Fatal(err)
	}
	if changed, _, _ := w.poll(); changed {
		t.Error("a file written as it was was reported as a change")
	}

	if err := os.WriteFile(path, []byte("server \"fs\" {\n  tool \"x\" {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, l, err = w.poll()
	if !changed || l != nil || err == nil || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("a broken file: changed %v, %v, %v", changed, l, err)
	}
	if changed, _, _ := w.poll(); changed {
		t.Error("a broken file was reported twice")
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if changed, l, err := w.poll(); !changed || l != nil || err != nil {
		t.Errorf("a removal: changed %v, %v, %v", changed, l, err)
	}
	if changed, _, _ := w.poll(); changed {
		t.Error("a removal was reported twice")
	}

	// A watcher that starts with no lockfile in force reports one that
	// appears.
	w = newWatcher(path, nil)
	if changed, _, _ := w.poll(); changed {
		t.Error("no file, none in force: reported a change")
	}
	if err := inForce.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if changed, l, err := w.poll(); !changed || err != nil || l == nil {
		t.Errorf("a lockfile that appeared: changed %v, %v, %v", changed, l, err)
	}
}
