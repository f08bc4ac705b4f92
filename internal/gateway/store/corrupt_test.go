package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A record that does not decode as a session (a store shared with another
// program, a half-written value) is an error naming the session from Get
// and Update, and Update neither runs its function on a blank session nor
// writes one over the record.
func TestMemoryCorruptRecord(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	ctx := context.Background()
	for _, data := range []string{"not json", `{"id": 5}`, `["a session?"]`, ``} {
		m.mu.Lock()
		m.sessions["s1"] = memSession{[]byte(data), m.now().Add(time.Minute)}
		m.mu.Unlock()
		if _, err := m.Get(ctx, "s1"); err == nil || !strings.Contains(err.Error(), "session s1: the stored record is not a session") {
			t.Errorf("Get of %q: %v", data, err)
		}
		err := m.Update(ctx, "s1", time.Minute, func(*Session) error {
			t.Errorf("Update of %q ran its function", data)
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "not a session") {
			t.Errorf("Update of %q: %v", data, err)
		}
		m.mu.Lock()
		kept := string(m.sessions["s1"].data)
		m.mu.Unlock()
		if kept != data {
			t.Errorf("Update replaced %q with %q", data, kept)
		}
	}
}
