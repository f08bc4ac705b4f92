package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A second holder waits, and a wait that ends says who holds the lock;
// once the first lets go, the second gets it.
func TestAcquire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	f, err := Acquire(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = Acquire(ctx, path)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())+", this one") {
		t.Fatalf("a held lock: %v", err)
	}
	got := make(chan error, 1)
	wait, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	go func() {
		g, err := Acquire(wait, path)
		if err == nil {
			g.Close()
		}
		got <- err
	}()
	f.Close()
	if err := <-got; err != nil {
		t.Fatalf("the lock was not passed on: %v", err)
	}
}

// Hold lets one holder in at a time, however many wait, though each
// removes the lock file as it lets go (a waiter that locked the removed
// file starts again); none is left behind.
func TestHold(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".guarded.lock")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				release, err := Hold(ctx, path)
				if err != nil {
					t.Error(err)
					return
				}
				n := in.Add(1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				runtime.Gosched() // let the others try while this one holds it
				in.Add(-1)
				release()
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m != 1 {
		t.Errorf("%d holders at once", m)
	}
	if entries, _ := os.ReadDir(dir); removeHeld && len(entries) != 0 {
		t.Errorf("left behind: %v", entries)
	}
}
