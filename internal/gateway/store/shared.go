package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/internal/transport/httpserver"
)

// Shared is httpserver.Shared over a Store: what lets the gateway's
// replicas serve each other's sessions.
type Shared struct {
	Store Store
	// TTL is a session's life without a request: the idle timeout.
	TTL     time.Duration
	replica string
}

// NewShared makes this process a replica sharing st; replica names it
// ("" picks a random name).
func NewShared(st Store, replica string, ttl time.Duration) *Shared {
	if replica == "" {
		var b [6]byte
		rand.Read(b[:])
		replica = hex.EncodeToString(b[:])
	}
	return &Shared{Store: st, TTL: ttl, replica: replica}
}

var _ httpserver.Shared = (*Shared)(nil)

// The methods implement httpserver.Shared; see there.

func (s *Shared) Replica() string { return s.replica }

func (s *Shared) Create(ctx context.Context, rec httpserver.SharedSession) error {
	return s.Store.Create(ctx, &Session{ID: rec.ID, Principal: rec.Principal, Agent: rec.Principal,
		Legacy: rec.Legacy, Owner: rec.Owner, Created: time.Now().UTC()}, s.TTL)
}

func (s *Shared) Lookup(ctx context.Context, id string) (httpserver.SharedSession, bool, error) {
	rec, err := s.Store.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return httpserver.SharedSession{}, false, nil
	}
	if errors.Is(err, ErrDamaged) {
		return httpserver.SharedSession{}, false, fmt.Errorf("%w: %w", httpserver.ErrDamagedSession, err)
	}
	if err != nil {
		return httpserver.SharedSession{}, false, err
	}
	return httpserver.SharedSession{ID: rec.ID, Principal: rec.Principal, Legacy: rec.Legacy, Owner: rec.Owner}, true, nil
}

func (s *Shared) Touch(ctx context.Context, id string) (bool, error) {
	err := s.Store.Touch(ctx, id, s.TTL)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

func (s *Shared) Delete(ctx context.Context, id string) error { return s.Store.Delete(ctx, id) }

func (s *Shared) Append(ctx context.Context, stream string, data []byte, max int) (string, error) {
	return s.Store.Append(ctx, stream, data, max, s.TTL)
}

func (s *Shared) Expire(ctx context.Context, stream string, ttl time.Duration) error {
	return s.Store.Expire(ctx, stream, ttl)
}

func (s *Shared) After(ctx context.Context, stream, after string) ([]httpserver.SharedEvent, bool, error) {
	evs, err := s.Store.After(ctx, stream, after, 0)
	if errors.Is(err, ErrGone) {
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

func (s *Shared) Send(ctx context.Context, replica string, msg []byte) error {
	ch := allChannel
	if replica != "" {
		ch = replicaChannel + replica
	}
	_, err := s.Store.Publish(ctx, ch, msg)
	return err
}

func (s *Shared) Receive(ctx context.Context) (<-chan []byte, error) {
	own, stopOwn, err := s.Store.Subscribe(ctx, replicaChannel+s.replica)
	if err != nil {
		return nil, err
	}
	all, stopAll, err := s.Store.Subscribe(ctx, allChannel)
	if err != nil {
		stopOwn()
		return nil, err
	}
	out := make(chan []byte, SubscriberBuffer)
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

func (s *Shared) Beat(ctx context.Context, ttl time.Duration) error {
	return s.Store.Beat(ctx, s.replica, ttl)
}

func (s *Shared) Alive(ctx context.Context, replica string) (bool, error) {
	return s.Store.Alive(ctx, replica)
}

func (s *Shared) First(ctx context.Context, key string, window time.Duration) (bool, error) {
	n, err := s.Store.Count(ctx, "first:"+key, window)
	return n == 1, err
}
