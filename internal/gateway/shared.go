package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/engine"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// ---- a session's state in the store ---------------------------------------

// stored ties a gateway session to its record in the store.
type stored struct {
	st       store.Store
	id       string
	ttl      time.Duration
	announce func(id string) // tells the other replicas the record changed
}

// save changes the session's record and tells the other replicas' instances
// of the session; a failure is logged by the caller.
func (st *stored) save(fn func(*store.Session)) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := st.st.Update(ctx, st.id, st.ttl, func(s *store.Session) error { fn(s); return nil })
	if err == nil && st.announce != nil {
		st.announce(st.id)
	}
	return err
}

// errDamaged is a session record the store returned but that cannot be
// taken up: asking again gets the same bytes, so the client must start a
// new session rather than retry.
var errDamaged = errors.New("the session's record in the store is damaged")

// subscription is a subscribed URI in the record: "<server> <uri>".
func subscription(server, uri string) string { return server + " " + uri }

// reload takes up what another replica changed in the session's record:
// the log level and the subscriptions.
func (s *session) reload() {
	ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
	defer cancel()
	rec, err := s.stored.st.Get(ctx, s.stored.id)
	if err != nil {
		s.g.log.Debug("cannot reload a session's state", "error", oneLine(err))
		return
	}
	s.mu.Lock()
	added := s.apply(rec)
	up := s.up
	s.mu.Unlock()
	s.takeUp(up, added)
}

// apply takes the log level and subscriptions of the session's record,
// and returns the subscriptions this instance did not have. Called with
// s.mu held.
func (s *session) apply(rec *store.Session) (added map[string]string) {
	if rec.LogLevel != "" {
		s.level = mcp.LoggingLevel(rec.LogLevel).Severity()
	}
	added = map[string]string{}
	subs := map[string]string{}
	for _, e := range rec.Subscriptions {
		if server, uri, ok := strings.Cut(e, " "); ok {
			subs[uri] = server
			if s.subs[uri] != server {
				added[uri] = server
			}
		}
	}
	s.subs = subs
	return added
}

// takeUp subscribes this replica's upstream connections to what the
// session subscribed to on another, in the background.
func (s *session) takeUp(up *engine.Host, subs map[string]string) {
	if len(subs) == 0 {
		return
	}
	go func() {
		for uri, server := range subs {
			ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
			if err := up.Subscribe(ctx, s.agent, server, uri); err != nil {
				s.g.log.Debug("taking up a subscription made on another replica failed", "server", server, "uri", uri, "error", oneLine(err))
			}
			cancel()
		}
	}()
}

// restore makes a session another replica opened what it was there: the
// client's initialize params, the negotiated version, its log level and
// subscriptions (which this replica's upstream connections take up, in
// the background). A session whose initialize never finished stays
// uninitialized.
func (s *session) restore() error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	rec, err := s.stored.st.Get(ctx, s.stored.id)
	var p mcp.InitializeParams
	if err == nil && len(rec.Init) > 0 {
		if jerr := json.Unmarshal(rec.Init, &p); jerr != nil {
			err = fmt.Errorf("%w: session %s: its initialize params do not decode (%v); was the store shared with another program?", errDamaged, s.stored.id, jerr)
		}
	}
	// A damaged record is unrestored too: served as uninitialized, the
	// session would tell its client to send initialize, which it did.
	s.mu.Lock()
	s.unrestored = err != nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if len(rec.Init) == 0 {
		return nil
	}
	s.mu.Lock()
	s.init, s.ready, s.version = &p, true, rec.Protocol
	s.setServed(rec.Protocol)
	if c := p.Capabilities; c.Sampling != nil || c.Elicitation != nil || c.Roots != nil {
		// Past the agent's cap the session shares the agent's
		// connections, whose servers' requests are refused: restoring
		// cannot refuse the initialize another replica accepted.
		if s.g.takeOwn(s.agent) {
			s.up, s.own = s.g.h.NewSession(s.sessionOptions(c)), true
		} else {
			s.g.log.Warn("a restored session shares its agent's upstream connections: the agent is at max_upstream_sessions_per_agent on this replica", "agent", s.agent)
		}
	}
	added := s.apply(rec)
	up := s.up
	s.mu.Unlock()
	s.takeUp(up, added)
	return nil
}
