package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Memory is the store of one process: the embedded default, nothing to
// install. Expired values are dropped when touched and by a sweep.
type Memory struct {
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]memSession
	streams  map[string]*memStream
	counters map[string]memCounter
	alive    map[string]time.Time // replica -> until
	reports  map[string]memSession
	subs     map[string]map[*memSub]struct{}
	closed   bool
	ops      int
	dropped  atomic.Int64
}

type memSession struct {
	data    []byte
	expires time.Time
}

type memStream struct {
	seq     uint64
	events  []Event
	expires time.Time
}

type memCounter struct {
	n       int64
	expires time.Time
}

type memSub struct{ ch chan []byte }

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{now: time.Now, sessions: map[string]memSession{}, streams: map[string]*memStream{},
		counters: map[string]memCounter{}, alive: map[string]time.Time{}, reports: map[string]memSession{}, subs: map[string]map[*memSub]struct{}{}}
}

// sweep drops what has expired, every 256 operations: the store never
// grows with sessions nobody ends.
func (m *Memory) sweep(now time.Time) {
	m.ops++
	if m.ops%256 != 0 {
		return
	}
	for k, s := range m.sessions {
		if now.After(s.expires) {
			delete(m.sessions, k)
		}
	}
	for k, s := range m.streams {
		if now.After(s.expires) {
			delete(m.streams, k)
		}
	}
	for k, c := range m.counters {
		if now.After(c.expires) {
			delete(m.counters, k)
		}
	}
}

func (m *Memory) lock() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	m.sweep(m.now())
	return nil
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, s *Session, ttl time.Duration) error {
	b, err := encode(s)
	if err != nil {
		return err
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	now := m.now()
	if old, ok := m.sessions[s.ID]; ok && !now.After(old.expires) {
		return ErrExists
	}
	m.sessions[s.ID] = memSession{b, now.Add(ttl)}
	return ctx.Err()
}

func (m *Memory) live(id string) (memSession, bool) {
	s, ok := m.sessions[id]
	if ok && m.now().After(s.expires) {
		delete(m.sessions, id)
		return s, false
	}
	return s, ok
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, id string) (*Session, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	s, ok := m.live(id)
	m.mu.Unlock()
	if !ok {
		return nil, ErrNotFound
	}
	return decode(id, s.data)
}

// Update implements Store.
func (m *Memory) Update(ctx context.Context, id string, ttl time.Duration, fn func(*Session) error) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	s, ok := m.live(id)
	if !ok {
		return ErrNotFound
	}
	sess, err := decode(id, s.data)
	if err != nil {
		return err
	}
	if err := fn(sess); err != nil {
		return err
	}
	sess.ID = id
	b, err := encode(sess)
	if err != nil {
		return err
	}
	m.sessions[id] = memSession{b, m.now().Add(ttl)}
	return nil
}

// Touch implements Store.
func (m *Memory) Touch(ctx context.Context, id string, ttl time.Duration) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	s, ok := m.live(id)
	if !ok {
		return ErrNotFound
	}
	s.expires = m.now().Add(ttl)
	m.sessions[id] = s
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, id string) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	delete(m.sessions, id)
	for k := range m.streams {
		if streamOf(k, id) {
			delete(m.streams, k)
		}
	}
	return nil
}

// Append implements Store.
func (m *Memory) Append(ctx context.Context, stream string, data []byte, max int, ttl time.Duration) (string, error) {
	if len(data) > MaxEventBytes {
		return "", fmt.Errorf("%w: an event of %d bytes (limit %d)", ErrTooLarge, len(data), MaxEventBytes)
	}
	if err := m.lock(); err != nil {
		return "", err
	}
	defer m.mu.Unlock()
	st := m.streams[stream]
	if st == nil || m.now().After(st.expires) {
		st = &memStream{}
		m.streams[stream] = st
	}
	st.seq++
	id := strconv.FormatUint(st.seq, 10)
	st.events = append(st.events, Event{ID: id, Data: append([]byte(nil), data...)})
	if max > 0 && len(st.events) > max {
		st.events = append([]Event(nil), st.events[len(st.events)-max:]...)
	}
	st.expires = m.now().Add(ttl)
	return id, nil
}

// Expire implements Store.
func (m *Memory) Expire(ctx context.Context, stream string, ttl time.Duration) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if st := m.streams[stream]; st != nil {
		st.expires = m.now().Add(ttl)
	}
	return nil
}

// After implements Store.
func (m *Memory) After(ctx context.Context, stream, after string, max int) ([]Event, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	st := m.streams[stream]
	if st == nil || m.now().After(st.expires) {
		if after != "" {
			return nil, ErrGone
		}
		return nil, nil
	}
	start := 0
	if after != "" {
		n, err := strconv.ParseUint(after, 10, 64)
		if err != nil || n > st.seq {
			return nil, fmt.Errorf("%w: %q is not an event id of this stream", ErrGone, after)
		}
		first, _ := strconv.ParseUint(st.events[0].ID, 10, 64)
		if n+1 < first {
			return nil, ErrGone
		}
		start = int(n + 1 - first)
	}
	out := st.events[start:]
	if max > 0 && len(out) > max {
		out = out[:max]
	}
	return append([]Event(nil), out...), nil
}

// Publish implements Store.
func (m *Memory) Publish(ctx context.Context, channel string, msg []byte) (int, error) {
	if len(msg) > MaxMessageBytes {
		return 0, fmt.Errorf("%w: a message of %d bytes (limit %d)", ErrTooLarge, len(msg), MaxMessageBytes)
	}
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	// Counted as Redis counts: every subscriber, also one too slow to
	// take it.
	for s := range m.subs[channel] {
		select {
		case s.ch <- append([]byte(nil), msg...):
		default:
			m.dropped.Add(1)
		}
	}
	return len(m.subs[channel]), nil
}

// Subscribe implements Store. The channel is closed when the
// subscription ends.
func (m *Memory) Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error) {
	if err := m.lock(); err != nil {
		return nil, nil, err
	}
	s := &memSub{ch: make(chan []byte, SubscriberBuffer)}
	if m.subs[channel] == nil {
		m.subs[channel] = map[*memSub]struct{}{}
	}
	m.subs[channel][s] = struct{}{}
	m.mu.Unlock()
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			m.mu.Lock()
			delete(m.subs[channel], s)
			if len(m.subs[channel]) == 0 {
				delete(m.subs, channel)
			}
			close(s.ch) // under the lock: Publish sends under it too
			m.mu.Unlock()
		})
	}
	stop := context.AfterFunc(ctx, cancel)
	return s.ch, func() { stop(); cancel() }, nil
}

// Dropped implements Store.
func (m *Memory) Dropped() int64 { return m.dropped.Load() }

// Count implements Store.
func (m *Memory) Count(ctx context.Context, key string, window time.Duration) (int64, error) {
	if err := m.lock(); err != nil {
		return 0, err
	}
	defer m.mu.Unlock()
	now := m.now()
	k := windowKey(key, now, window)
	c := m.counters[k]
	if c.expires.IsZero() || now.After(c.expires) {
		c = memCounter{expires: now.Add(window)}
	}
	c.n++
	m.counters[k] = c
	return c.n, nil
}

// Beat implements Store.
func (m *Memory) Beat(ctx context.Context, replica string, ttl time.Duration) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if ttl <= 0 {
		delete(m.alive, replica)
		return nil
	}
	m.alive[replica] = m.now().Add(ttl)
	return nil
}

// Alive implements Store.
func (m *Memory) Alive(ctx context.Context, replica string) (bool, error) {
	if err := m.lock(); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	until, ok := m.alive[replica]
	if ok && m.now().After(until) {
		delete(m.alive, replica)
		ok = false
	}
	return ok, nil
}

// Report implements Store.
func (m *Memory) Report(ctx context.Context, replica string, status []byte, ttl time.Duration) error {
	if len(status) > MaxReportBytes {
		return fmt.Errorf("%w: replica %s's status is %d bytes (limit %d)", ErrTooLarge, replica, len(status), MaxReportBytes)
	}
	if err := m.lock(); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if ttl <= 0 {
		delete(m.reports, replica)
		return nil
	}
	m.reports[replica] = memSession{append([]byte(nil), status...), m.now().Add(ttl)}
	return nil
}

// Reports implements Store.
func (m *Memory) Reports(ctx context.Context) (map[string][]byte, error) {
	if err := m.lock(); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	now := m.now()
	names := make([]string, 0, len(m.reports))
	for k, r := range m.reports {
		if now.After(r.expires) {
			delete(m.reports, k)
			continue
		}
		names = append(names, k)
	}
	sort.Strings(names)
	out := make(map[string][]byte, min(len(names), MaxReports))
	for _, k := range names[:min(len(names), MaxReports)] {
		out[k] = append([]byte(nil), m.reports[k].data...)
	}
	return out, nil
}

// Ping implements Store.
func (m *Memory) Ping(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return ctx.Err()
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}

// windowKey names key's counter for the window now falls in.
func windowKey(key string, now time.Time, window time.Duration) string {
	if window <= 0 {
		window = time.Second
	}
	return key + ":" + strconv.FormatInt(now.UnixNano()/int64(window), 10)
}

// StreamID names a stream of a session, so Delete finds the session's
// streams: "<session>/<stream>".
func StreamID(session, stream string) string { return session + "/" + stream }

func streamOf(streamKey, session string) bool {
	return len(streamKey) > len(session) && streamKey[:len(session)] == session && streamKey[len(session)] == '/'
}
