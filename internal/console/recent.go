package console

import (
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// recent keeps the last decisions (for their explain traces) and counts
// each agent's calls in 10-second slots (for calls per minute).
type recent struct {
	mu    sync.Mutex
	ring  []audit.Decision
	next  int
	rates map[string]*[6]slot
}

type slot struct {
	at int64 // unix time / 10
	n  int
}

// maxAgents bounds the rates kept: agents come from the config, but a
// record's agent is not checked against it here.
const maxAgents = 10000

func newRecent(n int) *recent {
	return &recent{ring: make([]audit.Decision, 0, n), rates: map[string]*[6]slot{}}
}

func (r *recent) add(d audit.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ring) < cap(r.ring) {
		r.ring = append(r.ring, d)
	} else {
		r.ring[r.next] = d
		r.next = (r.next + 1) % len(r.ring)
	}
	if d.Method != "tools/call" {
		return
	}
	s := r.rates[d.Agent]
	if s == nil {
		if len(r.rates) >= maxAgents {
			return
		}
		s = &[6]slot{}
		r.rates[d.Agent] = s
	}
	at := d.Time.Unix() / 10
	i := at % 6
	if s[i].at != at {
		s[i] = slot{at: at}
	}
	s[i].n++
}

// get is the kept decision with id, if it is still kept.
func (r *recent) get(id uint64) (audit.Decision, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// IDs grow by one as decisions are kept, but the feed may have
	// dropped some: search back from the newest.
	for i := len(r.ring) - 1; i >= 0; i-- {
		d := r.ring[(r.next+i)%len(r.ring)]
		if d.ID == id {
			return d, true
		}
		if d.ID < id {
			break
		}
	}
	return audit.Decision{}, false
}

// perMinute is each agent's tool calls in the last minute.
func (r *recent) perMinute() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now().Unix() / 10
	out := make(map[string]int, len(r.rates))
	for a, s := range r.rates {
		n := 0
		for _, sl := range s {
			if now-sl.at < 6 {
				n += sl.n
			}
		}
		out[a] = n
	}
	return out
}
