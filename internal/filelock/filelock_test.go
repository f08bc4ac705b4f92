package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
