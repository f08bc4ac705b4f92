package audit_test

import (
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// A feed never blocks its publisher: a subscriber whose buffer is full
// loses the decision, counted; the others get it; IDs number them all.
func TestFeedDropsForSlowSubscribers(t *testing.T) {
	var nilFeed *audit.Feed
	if nilFeed.Active() {
		t.Fatal("a nil feed is active")
	}
	nilFeed.Publish(audit.Decision{}) // nobody watches: nothing happens

	f := audit.NewFeed()
	if f.Active() {
		t.Fatal("a feed without subscribers is active")
	}
	slow, fast := f.Subscribe(2), f.Subscribe(100)
	for range 10 {
		f.Publish(audit.Decision{Record: audit.Record{Agent: "a"}})
	}
	if got := slow.Dropped(); got != 8 {
		t.Errorf("slow subscriber dropped %d, want 8", got)
	}
	if got := fast.Dropped(); got != 0 {
		t.Errorf("fast subscriber dropped %d", got)
	}
	var ids []uint64
	for range 10 {
		ids = append(ids, (<-fast.C).ID)
	}
	for i, id := range ids {
		if id != uint64(i+1) {
			t.Fatalf("ids %v", ids)
		}
	}
	slow.Close()
	slow.Close()
	if _, ok := <-slow.C; !ok {
		t.Error("Close dropped what the buffer held") // two were kept
	}
	fast.Close()
	if f.Active() {
		t.Error("active after every subscriber closed")
	}
}

// Publishing while subscribers come and go is safe (run with -race).
func TestFeedConcurrent(t *testing.T) {
	f := audit.NewFeed()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				f.Publish(audit.Decision{})
			}
		})
		wg.Go(func() {
			for range 100 {
				s := f.Subscribe(1)
				s.Close()
			}
		})
	}
	wg.Wait()
}
