package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/gateway/store"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/host/transport/httpserver"
)

// shared is httpserver.Shared over the session store: what lets the
// gateway's replicas serve each other's sessions.
type shared struct {
	st      store.Store
	replica string
	ttl     time.Duration // a session's life without a request: the idle timeout
}

func newShared(st store.Store, ttl time.Duration) *shared {
	var b [6]byte
	rand.Read(b[:])
	return &shared{st: st, replica: hex.EncodeToString(b[:]), ttl: ttl}
}

var _ httpserver.Shared = (*shared)(nil)

func (s *shared) Replica() string { return s.replica }

func (s *shared) Create(ctx context.Context, rec httpserver.SharedSession) error {
	return s.st.Create(ctx, &store.Session{ID: rec.ID, Principal: rec.Principal, Agent: rec.Principal,
		Legacy: rec.Legacy, Owner: rec.Owner, Created: time.Now().UTC()}, s.ttl)
}

func (s *shared) Lookup(ctx context.Context, id string) (httpserver.SharedSession, bool, error) {
	rec, err := s.st.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return httpserver.SharedSession{}, false, nil
	}
	if err != nil {
		return httpserver.SharedSession{}, false, err
	}
	return httpserver.SharedSession{ID: rec.ID, Principal: rec.Principal, Legacy: rec.Legacy, Owner: rec.Owner}, true, nil
}

func (s *shared) Touch(ctx context.Context, id string) (bool, error) {
	err := s.st.Touch(ctx, id, s.ttl)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (s *shared) Delete(ctx context.Context, id string) error { return s.st.Delete(ctx, id) }

func (s *shared) Append(ctx context.Context, stream string, data []byte, max int) (string, error) {
	return s.st.Append(ctx, stream, data, max, s.ttl)
}

func (s *shared) Expire(ctx context.Context, stream string, ttl time.Duration) error {
	return s.st.Expire(ctx, stream, ttl)
}

func (s *shared) After(ctx context.Context, stream, after string) ([]httpserver.SharedEvent, bool, error) {
	evs, err := s.st.After(ctx, stream, after, 0)
	if errors.Is(err, store.ErrGone) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]httpserver.SharedEvent, len(evs))
	for i, e := range evs {
		out[i] = httpserver.SharedEvent{ID: e.ID, Data: e.Data}
	}
	return out, false, nil
}

// Channels: each replica's own, and one every replica hears.
const (
	replicaChannel = "replica:"
	allChannel     = "replicas"
)

func (s *shared) Send(ctx context.Context, replica string, msg []byte) error {
	ch := allChannel
	if replica != "" {
		ch = replicaChannel + replica
	}
	return s.st.Publish(ctx, ch, msg)
}

func (s *shared) Receive(ctx context.Context) (<-chan []byte, error) {
	own, stopOwn, err := s.st.Subscribe(ctx, replicaChannel+s.replica)
	if err != nil {
		return nil, err
	}
	all, stopAll, err := s.st.Subscribe(ctx, allChannel)
	if err != nil {
		stopOwn()
		return nil, err
	}
	out := make(chan []byte, store.SubscriberBuffer)
	go func() {
		defer close(out)
		defer stopOwn()
		defer stopAll()
		for {
			var m []byte
			var ok bool
			select {
			case m, ok = <-own:
			case m, ok = <-all:
			}
			if !ok {
				return // one subscription is lost: the caller subscribes again
			}
			select {
			case out <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

func (s *shared) Beat(ctx context.Context, ttl time.Duration) error {
	return s.st.Beat(ctx, s.replica, ttl)
}

func (s *shared) Alive(ctx context.Context, replica string) (bool, error) {
	return s.st.Alive(ctx, replica)
}

func (s *shared) First(ctx context.Context, key string, window time.Duration) (bool, error) {
	n, err := s.st.Count(ctx, "first:"+key, window)
	return n == 1, err
}

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
	if rec.LogLevel != "" {
		s.level = mcp.LoggingLevel(rec.LogLevel).Severity()
	}
	added := map[string]string{}
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
	up := s.up
	s.mu.Unlock()
	s.takeUp(up, added)
}

// takeUp subscribes this replica's upstream connections to what the
// session subscribed to on another, in the background.
func (s *session) takeUp(up *host.Host, subs map[string]string) {
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
	s.mu.Lock()
	s.unrestored = err != nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if len(rec.Init) == 0 {
		return nil
	}
	var p mcp.InitializeParams
	if err := json.Unmarshal(rec.Init, &p); err != nil {
		return err
	}
	s.mu.Lock()
	s.init, s.ready, s.version = &p, true, rec.Protocol
	if c := p.Capabilities; c.Sampling != nil || c.Elicitation != nil || c.Roots != nil {
		s.up, s.own = s.g.h.NewSession(s.sessionOptions(c)), true
	}
	if rec.LogLevel != "" {
		s.level = mcp.LoggingLevel(rec.LogLevel).Severity()
	}
	subs := map[string]string{}
	for _, e := range rec.Subscriptions {
		if server, uri, ok := strings.Cut(e, " "); ok {
			subs[uri] = server
			s.subs[uri] = server
		}
	}
	up := s.up
	s.mu.Unlock()
	s.takeUp(up, subs)
	return nil
}
