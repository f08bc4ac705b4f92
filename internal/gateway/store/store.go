package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Session is what any replica needs to serve a request of a downstream
// session it did not start: who it is, what was negotiated, and what the
// client asked for since. Upstream connections are not in it: each
// replica opens its own, lazily, with these parameters.
type Session struct {
	ID string `json:"id"`
	// Principal is the identity that created the session (an agent, or
	// an OAuth subject mapped to one); a request authenticated as another
	// principal cannot use the session.
	Principal string `json:"principal"`
	Agent     string `json:"agent"`
	Protocol  string `json:"protocol"`
	// Init is the client's initialize params: its info and capabilities.
	Init          json.RawMessage `json:"init,omitempty"`
	LogLevel      string          `json:"log_level,omitempty"`
	Subscriptions []string        `json:"subscriptions,omitempty"`
	// Legacy sessions (HTTP+SSE) are served by their Owner only.
	Legacy bool `json:"legacy,omitempty"`
	// Owner is the replica that holds the session's standalone GET
	// stream, where server-initiated messages for the session go.
	Owner   string    `json:"owner,omitempty"`
	Created time.Time `json:"created"`
}

// Event is one SSE event of a stream, kept for resumption.
type Event struct {
	ID   string
	Data []byte
}

// Errors of a Store.
var (
	ErrNotFound = errors.New("no such session (it ended, expired, or never existed)")
	ErrExists   = errors.New("a session with this id exists")
	ErrGone     = errors.New("the events after this id are no longer kept")
	ErrConflict = errors.New("the session kept changing under the update")
	ErrTooLarge = errors.New("value over the store's size limit")
	ErrClosed   = errors.New("session store closed")
	// ErrDamaged is a record that does not decode: asking again gets the
	// same bytes, so a caller starts anew rather than retrying.
	ErrDamaged = errors.New("the stored record is damaged")
)

// Limits of what a Store keeps.
const (
	// MaxSessionBytes bounds one session's record.
	MaxSessionBytes = 256 << 10
	// MaxEventBytes bounds one stored event.
	MaxEventBytes = 4 << 20
	// MaxMessageBytes bounds one published message.
	MaxMessageBytes = 4 << 20
	// SubscriberBuffer is how many messages a slow subscriber may fall
	// behind before messages are dropped (and counted).
	SubscriberBuffer = 256
	// MaxReportBytes bounds one replica's status; MaxReports how many
	// replicas' statuses are read.
	MaxReportBytes = 1 << 20
	MaxReports     = 64
)

// Store is what gateway replicas share. Every method honours ctx, and
// every value it keeps expires: nothing outlives the sessions it serves.
type Store interface {
	// Create stores a new session for ttl; ErrExists if the id is taken.
	Create(ctx context.Context, s *Session, ttl time.Duration) error
	// Get returns a session; ErrNotFound when there is none.
	Get(ctx context.Context, id string) (*Session, error)
	// Update applies fn to the session atomically (fn may run again when
	// another replica changed the session meanwhile) and extends its ttl.
	Update(ctx context.Context, id string, ttl time.Duration, fn func(*Session) error) error
	// Touch extends a session's ttl; ErrNotFound when there is none.
	Touch(ctx context.Context, id string, ttl time.Duration) error
	// Delete ends a session and its streams' events.
	Delete(ctx context.Context, id string) error

	// Append adds an event to a stream (keeping at most max, for ttl
	// after the last append) and returns its id.
	Append(ctx context.Context, stream string, data []byte, max int, ttl time.Duration) (string, error)
	// Expire shortens (or extends) a stream's life to ttl from now: a
	// finished one need not be kept as long as a session.
	Expire(ctx context.Context, stream string, ttl time.Duration) error
	// After returns up to max events of a stream after the one with id
	// after ("" = from the first kept); ErrGone when that event is no
	// longer kept, so the client must not assume it missed nothing.
	After(ctx context.Context, stream, after string, max int) ([]Event, error)

	// Publish sends msg to the channel's subscribers on every replica and
	// returns how many there were: 0 says nobody listens (a replica that
	// listens on a channel of its own is gone).
	Publish(ctx context.Context, channel string, msg []byte) (int, error)
	// Subscribe delivers the channel's messages until cancel is called or
	// ctx ends; a subscriber that falls SubscriberBuffer behind loses
	// messages, counted by Dropped.
	Subscribe(ctx context.Context, channel string) (msgs <-chan []byte, cancel func(), err error)
	// Dropped counts messages dropped for slow subscribers.
	Dropped() int64

	// Count adds one to key's counter for the current window of the given
	// length and returns the count: a fixed-window rate limit that holds
	// across replicas.
	Count(ctx context.Context, key string, window time.Duration) (int64, error)

	// Beat marks a replica alive for ttl (ttl <= 0: gone, at once); Alive
	// says whether it still is (a replica that stopped beating died, or
	// lost the store).
	Beat(ctx context.Context, replica string, ttl time.Duration) error
	Alive(ctx context.Context, replica string) (bool, error)

	// Report keeps a replica's status (what the console shows of it:
	// its servers, agents and sessions) for ttl, replacing the one
	// before; ttl <= 0 removes it at once. Reports is the status of every
	// replica that reported within its ttl, by replica: at most
	// MaxReports of them, each cut to MaxReportBytes+1 bytes (a reader
	// tells an oversized one by its length). The store is shared, so a
	// value may be anything anyone who can write to it wrote: readers
	// check what they get.
	Report(ctx context.Context, replica string, status []byte, ttl time.Duration) error
	Reports(ctx context.Context) (map[string][]byte, error)

	// Ping says whether the store answers (readiness).
	Ping(ctx context.Context) error
	// Close releases the store's connections.
	Close() error
}

// Open returns the store a URL names: "memory" (or "") for one process,
// "redis://[user:password@]host:port[/db]" or "rediss://..." for Redis 7
// or Valkey shared by replicas.
func Open(url string) (Store, error) {
	switch {
	case url == "" || url == "memory":
		return NewMemory(), nil
	case strings.HasPrefix(url, "redis://"), strings.HasPrefix(url, "rediss://"), strings.HasPrefix(url, "unix://"):
		return NewRedis(RedisOptions{URL: url})
	}
	return nil, fmt.Errorf("session store %q: not a store this Nexus knows; use \"memory\" (one process) or redis://host:6379 (replicas sharing Redis or Valkey)", redact(url))
}

// Name is a store URL as messages show it: its password hidden.
func Name(url string) string {
	if url == "" {
		return "memory"
	}
	return redact(url)
}

// redact hides a URL's password for messages.
func redact(u string) string {
	at := strings.LastIndexByte(u, '@')
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	creds := u[scheme+3 : at]
	if i := strings.IndexByte(creds, ':'); i >= 0 {
		return u[:scheme+3] + creds[:i] + ":***" + u[at:]
	}
	return u
}

func encode(s *Session) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSessionBytes {
		return nil, fmt.Errorf("%w: session %s is %d bytes (limit %d)", ErrTooLarge, s.ID, len(b), MaxSessionBytes)
	}
	return b, nil
}

// damagedError is a session record that does not decode; it is ErrDamaged.
type damagedError struct {
	id  string
	err error
}

func (e *damagedError) Error() string {
	return fmt.Sprintf("session %s: the stored record is not a session (%v); was the store shared with another program?", e.id, e.err)
}

func (e *damagedError) Is(target error) bool { return target == ErrDamaged }

func decode(id string, b []byte) (*Session, error) {
	var s Session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, &damagedError{id, err}
	}
	return &s, nil
}
