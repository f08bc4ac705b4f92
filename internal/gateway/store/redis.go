package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/redis/go-redis/v9"
)

// RedisOptions configure a Redis (or Valkey) store.
type RedisOptions struct {
	// URL is redis://[user:password@]host:port[/db], rediss://... (TLS)
	// or unix:///path.
	URL string
	// Prefix is put before every key (default "nexus:"), so one Redis can
	// hold several deployments' state.
	Prefix string
	// Timeout bounds each command (default 2 s): a replica whose Redis
	// hangs fails the request, it does not hang with it.
	Timeout time.Duration
	// Logger receives what the Redis client logs (dial retries and the
	// like); nil discards it. go-redis has one logger per process: the
	// last store opened sets it.
	Logger hclog.Logger
}

// redisLog hands go-redis's log lines to hclog.
type redisLog struct{ l hclog.Logger }

func (r redisLog) Printf(_ context.Context, format string, v ...any) {
	r.l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)))
}

// Redis is the store replicas share: sessions as JSON values with a TTL,
// each stream's events in a Redis stream trimmed to its bound, messages
// for a session's owner over pub/sub, and counters per window.
type Redis struct {
	c       *redis.Client
	prefix  string
	where   string // the URL without its password, for messages
	dropped atomic.Int64
	closed  atomic.Bool
}

// NewRedis connects to the Redis a URL names (lazily: the first command
// dials; Ping checks).
func NewRedis(o RedisOptions) (*Redis, error) {
	opt, err := redis.ParseURL(o.URL)
	if err != nil {
		// url.Error repeats the URL, password and all: say only why.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("session store %s: %v (the form is redis://host:6379, rediss:// for TLS)", redact(o.URL), err)
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = o.Timeout, o.Timeout, o.Timeout
	opt.MaxRetries = 1
	if o.Prefix == "" {
		o.Prefix = "nexus:"
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	redis.SetLogger(redisLog{o.Logger.Named("redis")})
	return &Redis{c: redis.NewClient(opt), prefix: o.Prefix, where: redact(o.URL)}, nil
}

// fail says which store failed doing what, and what usually fixes it.
func (r *Redis) fail(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, redis.ErrClosed) || r.closed.Load():
		return ErrClosed
	}
	return fmt.Errorf("session store %s: %s: %w (is Redis or Valkey running and reachable from this replica?)", r.where, op, err)
}

func (r *Redis) sessionKey(id string) string { return r.prefix + "session:" + id }
func (r *Redis) streamKey(s string) string   { return r.prefix + "stream:{" + s + "}" }
func (r *Redis) lastKey(s string) string     { return r.prefix + "stream:{" + s + "}:last" }
func (r *Redis) streamsKey(id string) string { return r.prefix + "streams:" + id }

// Create implements Store.
func (r *Redis) Create(ctx context.Context, s *Session, ttl time.Duration) error {
	b, err := encode(s)
	if err != nil {
		return err
	}
	ok, err := r.c.SetNX(ctx, r.sessionKey(s.ID), b, ttl).Result()
	if err != nil {
		return r.fail("create session", err)
	}
	if !ok {
		return ErrExists
	}
	return nil
}

// Get implements Store.
func (r *Redis) Get(ctx context.Context, id string) (*Session, error) {
	b, err := r.c.Get(ctx, r.sessionKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, r.fail("get session", err)
	}
	return decode(id, b)
}

// maxUpdateTries bounds Update's optimistic retries.
const maxUpdateTries = 16

// Update implements Store: WATCH, read, fn, MULTI/EXEC, again when
// another replica wrote the session in between.
func (r *Redis) Update(ctx context.Context, id string, ttl time.Duration, fn func(*Session) error) error {
	key := r.sessionKey(id)
	for range maxUpdateTries {
		var own error // fn's, or the record's: not the store's failure
		err := r.c.Watch(ctx, func(tx *redis.Tx) error {
			b, err := tx.Get(ctx, key).Bytes()
			if errors.Is(err, redis.Nil) {
				own = ErrNotFound
				return own
			}
			if err != nil {
				return err
			}
			s, err := decode(id, b)
			if err == nil {
				err = fn(s)
			}
			var nb []byte
			if err == nil {
				s.ID = id
				nb, err = encode(s)
			}
			if err != nil {
				own = err
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, nb, ttl)
				return nil
			})
			return err
		}, key)
		switch {
		case own != nil:
			return own
		case errors.Is(err, redis.TxFailedErr):
			continue
		}
		return r.fail("update session", err)
	}
	return fmt.Errorf("%w: %s (%d tries)", ErrConflict, id, maxUpdateTries)
}

// Touch implements Store.
func (r *Redis) Touch(ctx context.Context, id string, ttl time.Duration) error {
	ok, err := r.c.PExpire(ctx, r.sessionKey(id), ttl).Result()
	if err != nil {
		return r.fail("touch session", err)
	}
	if !ok {
		return ErrNotFound
	}
	return nil
}

// Delete implements Store.
func (r *Redis) Delete(ctx context.Context, id string) error {
	streams, err := r.c.SMembers(ctx, r.streamsKey(id)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return r.fail("delete session", err)
	}
	keys := []string{r.sessionKey(id), r.streamsKey(id)}
	for _, s := range streams {
		keys = append(keys, r.streamKey(s), r.lastKey(s))
	}
	return r.fail("delete session", r.c.Del(ctx, keys...).Err())
}

// Append implements Store.
func (r *Redis) Append(ctx context.Context, stream string, data []byte, max int, ttl time.Duration) (string, error) {
	if len(data) > MaxEventBytes {
		return "", fmt.Errorf("%w: an event of %d bytes (limit %d)", ErrTooLarge, len(data), MaxEventBytes)
	}
	key := r.streamKey(stream)
	id, err := appendScript.Run(ctx, r.c, []string{key, r.lastKey(stream)}, max, data, ttl.Milliseconds()).Text()
	if err != nil {
		return "", r.fail("append event", err)
	}
	if session, _, ok := strings.Cut(stream, "/"); ok {
		_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SAdd(ctx, r.streamsKey(session), stream)
			p.PExpire(ctx, r.streamsKey(session), ttl)
			return nil
		})
		if err != nil {
			return "", r.fail("append event", err)
		}
	}
	return id, nil
}

// appendScript adds an event with the id of the one before it ("p"), so
// a resumption can tell whether the events after its id are all still
// kept: the first kept event must follow it.
var appendScript = redis.NewScript(`
local prev = redis.call('GET', KEYS[2]) or ''
local id = redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '*', 'd', ARGV[2], 'p', prev)
redis.call('SET', KEYS[2], id, 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
`)

// Expire implements Store.
func (r *Redis) Expire(ctx context.Context, stream string, ttl time.Duration) error {
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.PExpire(ctx, r.streamKey(stream), ttl)
		p.PExpire(ctx, r.lastKey(stream), ttl)
		return nil
	})
	return r.fail("expire a stream", err)
}

// After implements Store. The first kept event names the one before it:
// a resumption from before that has lost events, and says so.
func (r *Redis) After(ctx context.Context, stream, after string, max int) ([]Event, error) {
	key := r.streamKey(stream)
	if after != "" {
		if !validID(after) {
			return nil, fmt.Errorf("%w: %q is not an event id of this stream", ErrGone, after)
		}
		first, err := r.c.XRangeN(ctx, key, "-", "+", 1).Result()
		if err != nil {
			return nil, r.fail("read events", err)
		}
		if len(first) == 0 {
			return nil, ErrGone
		}
		if compareIDs(after, first[0].ID) < 0 {
			if prev, _ := first[0].Values["p"].(string); prev != after {
				return nil, ErrGone
			}
		}
		last, err := r.c.Get(ctx, r.lastKey(stream)).Result()
		if err == nil && compareIDs(after, last) > 0 {
			return nil, fmt.Errorf("%w: %q is not an event id of this stream", ErrGone, after)
		}
	}
	start := "-"
	if after != "" {
		start = "(" + after
	}
	var (
		msgs []redis.XMessage
		err  error
	)
	if max > 0 {
		msgs, err = r.c.XRangeN(ctx, key, start, "+", int64(max)).Result()
	} else {
		msgs, err = r.c.XRange(ctx, key, start, "+").Result()
	}
	if err != nil {
		return nil, r.fail("read events", err)
	}
	out := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		d, _ := m.Values["d"].(string)
		out = append(out, Event{ID: m.ID, Data: []byte(d)})
	}
	return out, nil
}

// validID reports whether s is a stream entry id, ms-seq.
func validID(s string) bool {
	ms, seq, ok := strings.Cut(s, "-")
	_, e1 := strconv.ParseUint(ms, 10, 64)
	_, e2 := strconv.ParseUint(seq, 10, 64)
	return ok && e1 == nil && e2 == nil
}

// compareIDs orders two stream entry ids.
func compareIDs(a, b string) int {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	x, _ := strconv.ParseUint(am, 10, 64)
	y, _ := strconv.ParseUint(bm, 10, 64)
	if x != y {
		if x < y {
			return -1
		}
		return 1
	}
	x, _ = strconv.ParseUint(as, 10, 64)
	y, _ = strconv.ParseUint(bs, 10, 64)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Publish implements Store: PUBLISH counts the subscribers, on every
// replica, that the message went to.
func (r *Redis) Publish(ctx context.Context, channel string, msg []byte) (int, error) {
	if len(msg) > MaxMessageBytes {
		return 0, fmt.Errorf("%w: a message of %d bytes (limit %d)", ErrTooLarge, len(msg), MaxMessageBytes)
	}
	n, err := r.c.Publish(ctx, r.prefix+"chan:"+channel, msg).Result()
	return int(n), r.fail("publish", err)
}

// Subscribe implements Store. The subscription is confirmed before it
// returns, so a message published after Subscribe returns is delivered;
// the channel is closed when the subscription ends.
func (r *Redis) Subscribe(ctx context.Context, channel string) (<-chan []byte, func(), error) {
	ps := r.c.Subscribe(ctx, r.prefix+"chan:"+channel)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, nil, r.fail("subscribe", err)
	}
	out := make(chan []byte, SubscriberBuffer)
	sctx, stop := context.WithCancel(ctx)
	// A receive blocks in a read that no context reaches: closing the
	// subscription's connection ends it.
	context.AfterFunc(sctx, func() { ps.Close() })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(out)
		for {
			m, err := ps.ReceiveMessage(sctx)
			if err != nil {
				return // cancelled, closed, or the connection is gone
			}
			select {
			case out <- []byte(m.Payload):
			default:
				r.dropped.Add(1)
			}
		}
	}()
	var once sync.Once
	cancel := func() {
		once.Do(func() {
			stop()
			wg.Wait()
		})
	}
	return out, cancel, nil
}

// Dropped implements Store.
func (r *Redis) Dropped() int64 { return r.dropped.Load() }

// Count implements Store.
func (r *Redis) Count(ctx context.Context, key string, window time.Duration) (int64, error) {
	k := r.prefix + "count:" + windowKey(key, time.Now(), window)
	var n *redis.IntCmd
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.Incr(ctx, k)
		p.Do(ctx, "PEXPIRE", k, (2 * window).Milliseconds(), "NX")
		return nil
	})
	if err != nil {
		return 0, r.fail("count", err)
	}
	return n.Val(), nil
}

// Beat implements Store.
func (r *Redis) Beat(ctx context.Context, replica string, ttl time.Duration) error {
	if ttl <= 0 {
		return r.fail("mark the replica gone", r.c.Del(ctx, r.prefix+"replica:"+replica).Err())
	}
	return r.fail("mark the replica alive", r.c.Set(ctx, r.prefix+"replica:"+replica, "1", ttl).Err())
}

// Alive implements Store.
func (r *Redis) Alive(ctx context.Context, replica string) (bool, error) {
	n, err := r.c.Exists(ctx, r.prefix+"replica:"+replica).Result()
	if err != nil {
		return false, r.fail("check a replica", err)
	}
	return n == 1, nil
}

// A replica's status is a value with its TTL; an index of the replicas
// (a sorted set, scored by when each status expires by its writer's
// clock) finds them without a scan of the keys. The value's TTL decides
// what is live: the index only says where to look.
func (r *Redis) reportKey(replica string) string { return r.prefix + "report:" + replica }
func (r *Redis) reportsKey() string              { return r.prefix + "reports" }

// reportSlack is how long past its expiry, by the reader's clock, an
// index entry is still looked at: replicas' clocks differ.
const reportSlack = time.Minute

// Report implements Store.
func (r *Redis) Report(ctx context.Context, replica string, status []byte, ttl time.Duration) error {
	if ttl <= 0 {
		_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, r.reportKey(replica))
			p.ZRem(ctx, r.reportsKey(), replica)
			return nil
		})
		return r.fail("remove the replica's status", err)
	}
	if len(status) > MaxReportBytes {
		return fmt.Errorf("%w: replica %s's status is %d bytes (limit %d)", ErrTooLarge, replica, len(status), MaxReportBytes)
	}
	now := time.Now()
	idx := r.reportsKey()
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.reportKey(replica), status, ttl)
		p.ZAdd(ctx, idx, redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: replica})
		p.ZRemRangeByScore(ctx, idx, "-inf", "("+strconv.FormatInt(now.Add(-reportSlack).UnixMilli(), 10))
		// The index lives as long as the longest-lived status in it
		// (plus the slack): NX gives it a TTL, GT only lengthens it.
		keep := (ttl + reportSlack).Milliseconds()
		p.Do(ctx, "PEXPIRE", idx, keep, "NX")
		p.Do(ctx, "PEXPIRE", idx, keep, "GT")
		return nil
	})
	return r.fail("report the replica's status", err)
}

// Reports implements Store: the latest to expire first (those that have,
// but are still in the index, last), each value read with GETRANGE, so
// a value someone made huge is read only to one byte past the limit.
func (r *Redis) Reports(ctx context.Context) (map[string][]byte, error) {
	// With REV, ZRANGE takes the highest score first.
	names, err := r.c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: r.reportsKey(), ByScore: true, Rev: true,
		Start: "+inf", Stop: strconv.FormatInt(time.Now().Add(-reportSlack).UnixMilli(), 10), Count: MaxReports}).Result()
	if err != nil {
		return nil, r.fail("read the replicas' statuses", err)
	}
	cmds := make([]*redis.StringCmd, len(names))
	_, err = r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.GetRange(ctx, r.reportKey(n), 0, MaxReportBytes)
		}
		return nil
	})
	if err != nil {
		return nil, r.fail("read the replicas' statuses", err)
	}
	out := make(map[string][]byte, len(names))
	for i, n := range names {
		if b, _ := cmds[i].Bytes(); len(b) > 0 { // "": expired (a status is never empty)
			out[n] = b
		}
	}
	return out, nil
}

// Ping implements Store.
func (r *Redis) Ping(ctx context.Context) error {
	return r.fail("ping", r.c.Ping(ctx).Err())
}

// Close implements Store.
func (r *Redis) Close() error {
	if !r.closed.CompareAndSwap(false, true) {
		return nil
	}
	return r.c.Close()
}
