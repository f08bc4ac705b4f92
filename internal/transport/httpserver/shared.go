package httpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// ErrDamagedSession is what Shared.Lookup's error is when a session's
// record is there but cannot be read.
var ErrDamagedSession = errors.New("this session's record in the session store is damaged")

// Shared is what the replicas of one service share (Options.Shared), so
// that any replica serves any request of any session, with no sticky
// routing. A replica that gets a request for a session it does not hold
// looks the session up and serves it with a local instance of its own;
// what must cross replicas travels through Shared:
//
//   - the session's record (its principal, whether it is legacy, who made
//     it), so a request authenticated as someone else cannot use it;
//   - SSE events: a request's stream, once it becomes one, is mirrored so
//     that a client whose replica died resumes it (Last-Event-ID) on
//     another, and learns there that its call failed if the replica died
//     before answering; the standalone stream lives only in Shared, so
//     what any replica sends a session reaches the one GET stream;
//   - messages between replicas: a client's answer to a request (sampling,
//     elicitation, roots) reaches the replica that asked, whose id is in
//     the request's id; a cancellation reaches the replica running the
//     call; the end of a session reaches every replica.
//
// The gateway implements it over its session store (Redis or Valkey).
type Shared interface {
	// Replica names this process among the replicas: unique, and without
	// '-', '.', ':' or '/'.
	Replica() string
	// Create records a new session; Lookup finds one (ok false: there is
	// none; an error that is ErrDamagedSession: its record cannot be
	// read, and never will be); Touch keeps it from expiring (ok false: it ended); Delete ends it.
	Create(ctx context.Context, rec SharedSession) error
	Lookup(ctx context.Context, id string) (rec SharedSession, ok bool, err error)
	Touch(ctx context.Context, id string) (ok bool, err error)
	Delete(ctx context.Context, id string) error
	// Append adds an event to a stream, keeping at most max; After
	// returns the events after the one with id after ("" = all kept), and
	// gone when that one is no longer kept.
	Append(ctx context.Context, stream string, data []byte, max int) (id string, err error)
	// Expire shortens a stream's life (a finished one: finishedKeep).
	Expire(ctx context.Context, stream string, ttl time.Duration) error
	After(ctx context.Context, stream, after string) (events []SharedEvent, gone bool, err error)
	// Send delivers msg to a replica's Receive ("" = every replica's).
	Send(ctx context.Context, replica string, msg []byte) error
	// Receive delivers this replica's messages until ctx ends; the channel
	// closes when the connection to the store is lost (call it again).
	Receive(ctx context.Context) (<-chan []byte, error)
	// Beat says this replica is alive for ttl; Alive asks about another.
	Beat(ctx context.Context, ttl time.Duration) error
	Alive(ctx context.Context, replica string) (bool, error)
	// First reports whether this is the first use of key within window,
	// on any replica (every replica's upstream connections hear a
	// server's list_changed: the client is told once).
	First(ctx context.Context, key string, window time.Duration) (bool, error)
}

// SharedSession is a session's record in Shared.
type SharedSession struct {
	ID        string
	Principal string
	// Legacy sessions (HTTP+SSE) live on the replica holding their one
	// stream, Owner; a message POSTed to another replica is sent there.
	Legacy bool
	Owner  string
}

// SharedEvent is one stored event.
type SharedEvent struct {
	ID   string
	Data []byte
}

// Bounds of the shared mode.
const (
	sharedTimeout = 3 * time.Second // one store operation
	beatEvery     = 2 * time.Second
	beatTTL       = 10 * time.Second // a replica silent this long is dead
	// finishedKeep is how long a response stream stays in the store once
	// complete (or abandoned): long enough for a client that lost its
	// connection to resume it, far shorter than a session.
	finishedKeep = 5 * time.Minute
)

// Messages between replicas: a kind letter, a space, the session (or
// stream) id, and for some a newline and a JSON-RPC message.
const (
	msgWake     = 'w' // w <session>/<stream>: events were appended
	msgResponse = 'r' // r <session>\n<response to a request this replica sent>
	msgCancel   = 'c' // c <session>\n<notifications/cancelled>
	msgEnd      = 'e' // e <session>: the session was deleted
	msgLegacy   = 'l' // l <session>\n<a message for a legacy session held here>
	msgChanged  = 's' // s <session>\n<replica>: that replica changed the session's state
	msgTakeover = 't' // t <session>\n<token>: a GET stream took the session's standalone stream over
)

func busMessage(kind byte, id string, body []byte) []byte {
	b := make([]byte, 0, 2+len(id)+1+len(body))
	b = append(b, kind, ' ')
	b = append(b, id...)
	if body != nil {
		b = append(b, '\n')
		b = append(b, body...)
	}
	return b
}

// sharedState is a Handler's part in the shared mode.
type sharedState struct {
	Shared
	replica string

	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{} // stream key -> pumps waiting for events
	gets    map[string]*standaloneGet             // session -> the GET writing its standalone stream here
	ends    map[string]time.Time                  // sessions deleted lately -> when (not restored again)
}

// standaloneGet is the GET stream that writes a session's standalone
// stream; a newer one, on any replica, stops it (the spec: a message goes
// to one stream).
type standaloneGet struct {
	token string
	stop  chan struct{} // closed: a newer GET on this replica
	// check gets another replica's word that it took the stream over.
	// The word may be older than this GET (the bus delivers each
	// replica's messages in their own time), so the GET asks the store
	// which owner is the newest before it stops (ownedElsewhere).
	check chan struct{}
}

// How long, and how many, deleted sessions a replica remembers, so a
// restore racing a DELETE elsewhere does not bring one back.
const (
	endMemory = time.Minute
	maxEnds   = 4096
)

// tombstone remembers that a session was deleted.
func (sh *sharedState) tombstone(id string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := time.Now()
	if len(sh.ends) >= maxEnds {
		for k, t := range sh.ends {
			if now.Sub(t) > endMemory || len(sh.ends) >= maxEnds {
				delete(sh.ends, k)
			}
		}
	}
	sh.ends[id] = now
}

// ended reports whether a session was deleted lately.
func (sh *sharedState) ended(id string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t, ok := sh.ends[id]
	return ok && time.Since(t) < endMemory
}

// takeOver makes a GET the one that writes a session's standalone stream
// here, stopping the one before it; release when it ends.
func (sh *sharedState) takeOver(id, token string) (g *standaloneGet, release func()) {
	g = &standaloneGet{token: token, stop: make(chan struct{}), check: make(chan struct{}, 1)}
	sh.mu.Lock()
	if old := sh.gets[id]; old != nil {
		close(old.stop)
	}
	sh.gets[id] = g
	sh.mu.Unlock()
	return g, func() {
		sh.mu.Lock()
		if sh.gets[id] == g {
			delete(sh.gets, id)
		}
		sh.mu.Unlock()
	}
}

// takenOver tells this replica's GET of a session's standalone stream
// that another GET (with another token) took it over; the GET checks the
// store, since a newer one may be itself.
func (sh *sharedState) takenOver(id, token string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if g := sh.gets[id]; g != nil && g.token != token {
		select {
		case g.check <- struct{}{}:
		default: // one check is pending already
		}
	}
}

// startShared runs the replica's heartbeat and its message loop.
func (h *Handler) startShared() {
	sh := h.shared
	sh.replica = sh.Replica()
	sh.waiters = map[string]map[chan struct{}]struct{}{}
	sh.gets = map[string]*standaloneGet{}
	sh.ends = map[string]time.Time{}
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(beatEvery)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
			if err := sh.Beat(ctx, beatTTL); err != nil && h.ctx.Err() == nil {
				h.log.Warn("cannot tell the other replicas this one is alive", "error", err)
			}
			cancel()
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	// The bus is publish and subscribe: what other replicas send before
	// this one listens is lost (a message forwarded for a session a
	// client just opened here, say). So the handler is returned, and
	// serves, once the first subscription is made or has failed, waiting
	// at most one store operation's time.
	tried := make(chan struct{})
	go func(first chan struct{}) {
		defer h.wg.Done()
		wait := 100 * time.Millisecond
		for h.ctx.Err() == nil {
			msgs, err := sh.Receive(h.ctx)
			if first != nil {
				close(first)
				first = nil
			}
			if err != nil {
				h.log.Warn("cannot receive messages from the other replicas; retrying", "error", err, "in", wait)
				select {
				case <-h.ctx.Done():
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, 5*time.Second)
				continue
			}
			wait = 100 * time.Millisecond
			for m := range msgs {
				h.onMessage(m)
			}
		}
	}(tried)
	select {
	case <-tried:
	case <-time.After(sharedTimeout):
		h.log.Warn("the session store has not let this replica listen to the others yet; what they send until it does is lost", "waited", sharedTimeout)
	}
}

// onMessage acts on a message from another replica.
func (h *Handler) onMessage(m []byte) {
	if len(m) < 3 || m[1] != ' ' {
		return
	}
	head, body, _ := bytes.Cut(m[2:], []byte{'\n'})
	id := string(head)
	switch m[0] {
	case msgWake:
		h.shared.wake(id)
		return
	case msgTakeover:
		h.shared.takenOver(id, string(body))
		return
	case msgEnd:
		h.shared.tombstone(id)
	}
	s := h.session(id)
	if s == nil {
		return
	}
	switch m[0] {
	case msgEnd:
		h.endLocal(s)
	case msgResponse:
		if b, ok := h.ownID(body); ok {
			s.conn.deliverMessage(h.ctx, b, false)
		}
	case msgCancel:
		pm, err := parseIncoming(body)
		if err != nil || !s.conn.has(pm.RequestID) {
			return
		}
		s.conn.cancelled(pm.RequestID)
		s.conn.deliverMessage(h.ctx, body, false)
	case msgChanged:
		if string(body) != h.shared.replica && h.opts.Changed != nil {
			h.opts.Changed(id)
		}
	case msgLegacy:
		if s.info.Legacy {
			h.legacyForwarded(s, bytes.Clone(body))
		}
	}
}

// Announce tells the other replicas that the ServeFunc changed the state
// of a session it keeps in the store (Options.Changed runs there).
func (h *Handler) Announce(id string) {
	if h.shared != nil {
		h.send("", busMessage(msgChanged, id, []byte(h.shared.replica)))
	}
}

// waiter registers for the wake of a stream; call done when leaving.
func (sh *sharedState) waiter(key string) (ch chan struct{}, done func()) {
	ch = make(chan struct{}, 1)
	sh.mu.Lock()
	if sh.waiters[key] == nil {
		sh.waiters[key] = map[chan struct{}]struct{}{}
	}
	sh.waiters[key][ch] = struct{}{}
	sh.mu.Unlock()
	return ch, func() {
		sh.mu.Lock()
		delete(sh.waiters[key], ch)
		if len(sh.waiters[key]) == 0 {
			delete(sh.waiters, key)
		}
		sh.mu.Unlock()
	}
}

func (sh *sharedState) wake(key string) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for ch := range sh.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// send is Send with a bounded wait, logged on failure.
func (h *Handler) send(replica string, msg []byte) error {
	ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
	defer cancel()
	err := h.shared.Send(ctx, replica, msg)
	if err != nil && h.ctx.Err() == nil {
		h.log.Warn("cannot reach the other replicas", "error", err)
	}
	return err
}

// sendOrRefuse sends a client's message on to another replica, or tells
// the client it could not (it may retry).
func (h *Handler) sendOrRefuse(w http.ResponseWriter, replica string, msg []byte) {
	if err := h.send(replica, msg); err != nil {
		w.Header().Set("Retry-After", "2")
		rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, "cannot pass the message to the replica that holds what it answers: "+err.Error())
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// lookup finds the record of a session another replica opened, for the
// request's principal and transport, or answers why it cannot.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request, sid, principal string, legacy bool) (SharedSession, bool) {
	ctx, cancel := context.WithTimeout(r.Context(), sharedTimeout)
	rec, ok, err := h.shared.Lookup(ctx, sid)
	cancel()
	switch {
	case errors.Is(err, ErrDamagedSession):
		// 404 makes a client start anew (the spec's answer to a session
		// the server no longer has); retrying would read the same bytes.
		h.log.Warn("a session's record in the store is damaged", "session", sid, "error", err)
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, err.Error()+"; initialize a new session")
	case err != nil:
		w.Header().Set("Retry-After", "2")
		rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, "the session store does not answer, so this replica cannot serve a session another one opened: "+err.Error()+"; retry, and check the store")
	case !ok:
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "unknown or ended session; initialize a new one")
	case rec.Principal != principal:
		rpcError(w, http.StatusForbidden, mcp.CodeInvalidRequest, "this session was opened with other credentials; initialize a session of your own")
	case rec.Legacy && !legacy:
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "this session uses the HTTP+SSE transport; POST to its endpoint")
	case !rec.Legacy && legacy:
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "this session uses streamable HTTP; POST to the MCP endpoint with Mcp-Session-Id")
	default:
		return rec, true
	}
	return rec, false
}

// restore makes a local instance of a session another replica opened, or
// answers why it cannot.
func (h *Handler) restore(w http.ResponseWriter, r *http.Request, sid, principal string) *session {
	if _, ok := h.lookup(w, r, sid, principal, false); !ok {
		return nil
	}
	s, err := h.newSession(sid, principal, false, true)
	if errors.Is(err, errEnded) {
		rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "unknown or ended session; initialize a new one")
		return nil
	}
	if err != nil {
		w.Header().Set("Retry-After", "5")
		rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, err.Error())
		return nil
	}
	return s
}

// keepAlive extends the session's life in the store, at most every
// quarter of the idle timeout (not a store round trip per request); a
// session another replica ended ends here too.
func (h *Handler) keepAlive(s *session) {
	now := time.Now().UnixNano()
	last := s.stored.Load()
	if now-last < int64(h.opts.IdleTimeout/4) || !s.stored.CompareAndSwap(last, now) {
		return
	}
	h.spawn(func() {
		ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
		defer cancel()
		ok, err := h.shared.Touch(ctx, s.info.ID)
		switch {
		case err == nil && !ok:
			h.endLocal(s) // ended elsewhere, or expired
		case err == nil:
			s.storeDown.Store(0)
		default:
			// The store is down: the session goes on here, for at most
			// the idle timeout, since no other replica can serve it and
			// its record may expire meanwhile.
			first := s.storeDown.Load()
			if first == 0 {
				s.storeDown.Store(now)
			} else if now-first > int64(h.opts.IdleTimeout) {
				h.log.Warn("ending a session: the session store has not answered for the idle timeout", "session", s.info.ID, "error", err)
				h.endLocal(s)
			}
		}
	})
}

// legacyForwarded serves a message another replica got for a legacy
// session held here, under the same limits as one POSTed here; a request
// over them is answered on the stream, since its POST was answered already.
func (h *Handler) legacyForwarded(s *session, body []byte) {
	m, err := parseIncoming(body)
	if err != nil {
		return
	}
	if m.Method != "" && m.hasID() {
		if status, msg := h.count(s); status != 0 {
			s.conn.standalone.add(errorMessage(m.ID, &mcp.RPCError{Code: mcp.CodeBusy, Message: msg}), false, &h.opts)
			return
		}
		s.conn.countLegacy(m.ID, func() { h.release(s) })
	}
	ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
	defer cancel()
	h.legacyPush(ctx, s, m, body)
}

// forget deletes a session that ended here for good (its legacy stream
// closed, or its client stopped reading) from the store, in the
// background, and tells the other replicas.
func (h *Handler) forget(id string) {
	h.shared.tombstone(id)
	h.spawn(func() {
		ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
		defer cancel()
		if err := h.shared.Delete(ctx, id); err != nil && h.ctx.Err() == nil {
			h.log.Warn("cannot delete an ended session from the session store; it expires there by itself", "session", id, "error", err)
		}
		h.send("", busMessage(msgEnd, id, nil))
	})
}

// endLocal ends this replica's instance of a session.
func (h *Handler) endLocal(s *session) {
	h.mu.Lock()
	if h.sessions[s.info.ID] == s {
		delete(h.sessions, s.info.ID)
	}
	h.mu.Unlock()
	s.end()
}

// ---- requests -------------------------------------------------------------

// record puts a session this replica opened in the store; when it cannot,
// the session ends and the client is told why.
func (h *Handler) record(w http.ResponseWriter, r *http.Request, s *session) bool {
	ctx, cancel := context.WithTimeout(r.Context(), sharedTimeout)
	err := h.shared.Create(ctx, SharedSession{ID: s.info.ID, Principal: s.info.Principal, Legacy: s.info.Legacy, Owner: h.shared.replica})
	cancel()
	if err == nil {
		return true
	}
	h.endLocal(s)
	w.Header().Set("Retry-After", "5")
	rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, "cannot open a session: the session store does not answer: "+err.Error()+"; retry once it is back")
	return false
}

// routeShared sends a client's notification or answer where it belongs
// when that is another replica: an answer to the replica whose request it
// answers, a cancellation of a request not running here to every replica.
// It reports whether it answered the POST.
func (h *Handler) routeShared(w http.ResponseWriter, s *session, m incoming, body []byte) bool {
	switch {
	case m.Method == "" && m.hasID():
		replica, _, ok := replicaOf(body)
		if !ok {
			return false
		}
		if replica == h.shared.replica {
			b, _ := h.ownID(body)
			if !s.conn.deliverMessage(h.ctx, b, false) {
				rpcError(w, http.StatusNotFound, mcp.CodeInvalidRequest, "the session ended")
				return true
			}
			w.WriteHeader(http.StatusAccepted)
		} else {
			h.sendOrRefuse(w, replica, busMessage(msgResponse, s.info.ID, body))
		}
		return true
	case m.Method == mcp.NotificationCancelled && !s.conn.has(m.RequestID):
		h.send("", busMessage(msgCancel, s.info.ID, body))
	}
	return false
}

// getShared serves a GET the store must answer: the standalone stream of
// a shared session, or a request's stream resumed on a replica that does
// not hold it. It reports whether it answered.
func (h *Handler) getShared(w http.ResponseWriter, r *http.Request, s *session) bool {
	last := r.Header.Get("Last-Event-Id")
	if last == "" {
		h.pumpShared(w, r, s, "g", "")
		return true
	}
	if after, ok := strings.CutPrefix(last, "g-"); ok {
		h.pumpShared(w, r, s, "g", after)
		return true
	}
	if st, after, ok := s.conn.lookup(last); ok {
		st.mu.Lock()
		gap := len(st.events) > 0 && st.events[0].seq > after+1 && st.mirrored > 0
		st.mu.Unlock()
		if !gap {
			return false // a stream of this replica's, with what the client missed
		}
		// Its client read it elsewhere meanwhile, and what it missed was
		// dropped here once in the store: resume from the store.
	}
	i := strings.LastIndexByte(last, '-')
	if i < 0 || !strings.Contains(last[:i], ".") {
		return false
	}
	if _, err := strconv.Atoi(last[i+1:]); err != nil {
		return false
	}
	// Known to the store? Its head went there before any id of it left.
	ctx, cancel := context.WithTimeout(r.Context(), sharedTimeout)
	evs, _, err := h.shared.After(ctx, streamKey(s.info.ID, last[:i]), "")
	cancel()
	if err != nil {
		w.Header().Set("Retry-After", "2")
		rpcError(w, http.StatusServiceUnavailable, mcp.CodeInternalError, "the session store does not answer, so this replica cannot resume a stream another one began: "+err.Error())
		return true
	}
	if len(evs) == 0 {
		return false
	}
	h.pumpShared(w, r, s, last[:i], last[i+1:])
	return true
}

// forwardLegacy sends a message POSTed for a legacy session held by
// another replica to that replica.
func (h *Handler) forwardLegacy(w http.ResponseWriter, r *http.Request, sid, principal string) {
	rec, ok := h.lookup(w, r, sid, principal, true)
	if !ok {
		return
	}
	body, _, ok := h.readBody(w, r)
	if !ok {
		return
	}
	h.sendOrRefuse(w, rec.Owner, busMessage(msgLegacy, sid, body))
}

// ---- ids of requests this replica sends -----------------------------------

// ownID turns an answer's id back into the one this replica's server side
// used; ok is false when the id is not this replica's.
func (h *Handler) ownID(msg []byte) ([]byte, bool) {
	replica, raw, ok := replicaOf(msg)
	if !ok || replica != h.shared.replica {
		return nil, false
	}
	b, err := withID(msg, json.RawMessage(raw))
	return b, err == nil
}

// replicaOf reads the replica and original id of an answer to a request a
// replica sent.
func replicaOf(msg []byte) (replica, raw string, ok bool) {
	pm, err := mcp.ParseMessage(msg)
	if err != nil || len(pm.ID) == 0 || pm.ID[0] != '"' {
		return "", "", false
	}
	var s string
	if json.Unmarshal(pm.ID, &s) != nil {
		return "", "", false
	}
	replica, raw, ok = strings.Cut(s, ":")
	return replica, raw, ok && raw != "" && json.Valid([]byte(raw))
}

func withID(msg []byte, id json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, err
	}
	m["id"] = id
	return json.Marshal(m)
}

// withParam sets one member of a message's params.
func withParam(msg []byte, name string, v json.RawMessage) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, err
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(m["params"], &p); err != nil {
		return nil, err
	}
	p[name] = v
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	m["params"] = b
	return json.Marshal(m)
}

// ---- events in the store ---------------------------------------------------

// A stored event is "<flag>\n<request key>\n<seq>\n<message>": flag h is a
// request stream's head (no message), e an event, f a request's answer,
// its last event; E and F stand for an event or answer the store could not
// keep (too large, or the store was away). The standalone stream's events have no key or seq:
// their ids are the store's.

func storedEvent(flag byte, key string, seq int, data []byte) []byte {
	b := make([]byte, 0, 4+len(key)+8+len(data))
	b = append(b, flag, '\n')
	b = append(b, key...)
	b = append(b, '\n')
	if seq > 0 {
		b = strconv.AppendInt(b, int64(seq), 10)
	}
	b = append(b, '\n')
	return append(b, data...)
}

func parseStored(b []byte) (flag byte, key string, seq int, data []byte, ok bool) {
	if len(b) < 2 || b[1] != '\n' {
		return 0, "", 0, nil, false
	}
	flag = b[0]
	rest := b[2:]
	k, rest, ok1 := bytes.Cut(rest, []byte{'\n'})
	sq, rest, ok2 := bytes.Cut(rest, []byte{'\n'})
	if !ok1 || !ok2 {
		return 0, "", 0, nil, false
	}
	if len(sq) > 0 {
		n, err := strconv.Atoi(string(sq))
		if err != nil {
			return 0, "", 0, nil, false
		}
		seq = n
	}
	return flag, string(k), seq, rest, true
}

// streamKey names a session's stream in the store.
func streamKey(session, stream string) string { return session + "/" + stream }

// mirror copies a request's SSE stream to the store as it grows, so a
// client whose replica dies resumes it on another. Its head went first
// (reply), before the client saw any event id of it.
func (h *Handler) mirror(s *session, st *stream) {
	key := streamKey(s.info.ID, st.id)
	mirrored, warned := 0, false
	for {
		st.mu.Lock()
		var batch []streamEvent
		for _, ev := range st.events {
			if ev.seq > mirrored {
				batch = append(batch, ev)
			}
		}
		done, last, orphan, ch := st.done, st.next-1, st.orphan, st.waitCh()
		st.mu.Unlock()
		if orphan {
			h.expire(key) // abandoned: nobody will resume it
			return
		}
		for _, ev := range batch {
			flag := byte('e')
			if done && ev.seq == last {
				flag = 'f'
			}
			err := h.appendRetry(key, storedEvent(flag, st.key, ev.seq, ev.data), h.opts.ReplayEvents+1)
			if err != nil {
				// Too large for the store, or the store is away: say so
				// in its place, so a resumption elsewhere does not wait
				// for it.
				if !warned && h.ctx.Err() == nil {
					warned = true
					h.log.Warn("cannot copy a response stream to the session store; a client resuming it on another replica misses part of it", "session", s.info.ID, "stream", st.id, "error", err)
				}
				err = h.appendRetry(key, storedEvent(flag-'a'+'A', st.key, ev.seq, nil), h.opts.ReplayEvents+1)
			}
			mirrored = ev.seq
			if err == nil {
				// In the store: the local copy may let it go (stream.add).
				st.mu.Lock()
				st.mirrored = mirrored
				st.mu.Unlock()
			}
		}
		if len(batch) > 0 {
			h.send("", busMessage(msgWake, key, nil))
		}
		if done && mirrored >= last {
			h.expire(key)
			return
		}
		select {
		case <-ch:
		case <-s.conn.done:
			return
		case <-h.ctx.Done():
			return
		}
	}
}

// appendRetry appends an event, trying again a few times over a second
// or so: a blip of the store must not leave a resumed stream without its
// answer.
func (h *Handler) appendRetry(key string, data []byte, max int) error {
	var err error
	for try := range 4 {
		if try > 0 {
			select {
			case <-h.ctx.Done():
				return err
			case <-time.After(time.Duration(try*try) * 100 * time.Millisecond):
			}
		}
		ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
		_, err = h.shared.Append(ctx, key, data, max)
		cancel()
		if err == nil {
			return nil
		}
	}
	return err
}

// expire shortens a finished stream's life in the store.
func (h *Handler) expire(key string) {
	ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
	defer cancel()
	if err := h.shared.Expire(ctx, key, finishedKeep); err != nil && h.ctx.Err() == nil {
		h.log.Debug("cannot shorten a finished stream's life in the session store; it expires with the session", "stream", key, "error", err)
	}
}

// storeHead records a request stream before the client sees its id.
func (h *Handler) storeHead(ctx context.Context, s *session, st *stream) error {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	_, err := h.shared.Append(ctx, streamKey(s.info.ID, st.id), storedEvent('h', st.key, 0, nil), h.opts.ReplayEvents+1)
	return err
}

// outbox sends what a session's server side writes to its standalone
// stream to the store, in order, and wakes whichever replica's GET is
// reading it.
func (h *Handler) outbox(s *session) {
	defer h.wg.Done()
	key := streamKey(s.info.ID, "g")
	for {
		select {
		case data := <-s.conn.out:
			if !h.firstSignal(s, data) {
				continue
			}
			ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
			_, err := h.shared.Append(ctx, key, storedEvent('e', "", 0, data), h.opts.ReplayEvents)
			cancel()
			if err != nil {
				if h.ctx.Err() == nil {
					h.log.Warn("a message for the session's GET stream is lost: the session store does not answer", "session", s.info.ID, "error", err)
				}
				continue
			}
			h.send("", busMessage(msgWake, key, nil))
		case <-s.conn.done:
			return
		case <-h.ctx.Done():
			return
		}
	}
}

// firstSignal reports whether a message should go to the session's GET
// stream: every message does, except a signal another replica sent the
// session within Options.SignalWindow (each replica's upstream connection
// hears the server's notification). A store that does not answer lets it
// go.
func (h *Handler) firstSignal(s *session, data []byte) bool {
	pm, err := mcp.ParseMessage(data)
	if err != nil || (pm.Method != mcp.NotificationResourceUpdated && !strings.HasSuffix(pm.Method, "/list_changed")) {
		return true
	}
	sum := sha256.Sum256(data)
	ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
	defer cancel()
	first, err := h.shared.First(ctx, s.info.ID+"/signal/"+hex.EncodeToString(sum[:12]), h.opts.SignalWindow)
	return first || err != nil
}

// errReplicaLost answers a request whose replica died before answering.
func errReplicaLost(key string) []byte {
	return retryable(key, "the gateway replica serving this request stopped before it answered; the request may or may not have reached its server: retry it if that is safe")
}

// errAnswerLost answers a resumed request whose answer the store could
// not keep.
func errAnswerLost(key string) []byte {
	return retryable(key, "the request was answered, but the answer could not be kept for a client resuming on another gateway replica (too large for the session store, or the store was away); retry the request if that is safe")
}

// retryable is an error response, marked retryable, to the request with
// the id key.
func retryable(key, msg string) []byte {
	return errorMessage(keyRaw(key), &mcp.RPCError{Code: mcp.CodeInternalError, Message: msg, Data: json.RawMessage(`{"retryable":true}`)})
}

// keyRaw turns an id key (idKey) back into the id.
func keyRaw(key string) json.RawMessage {
	if s, ok := strings.CutPrefix(key, "s:"); ok {
		b, _ := json.Marshal(s)
		return b
	}
	return json.RawMessage(strings.TrimPrefix(key, "n:"))
}

// pumpShared writes a stream from the store to one connection: the
// standalone stream of a shared session (from the event after `after`, a
// store id, or from what no connection got yet), or a request's stream
// resumed on a replica that is not its own (from seq `after`). A request
// stream whose replica died without answering ends with errReplicaLost.
func (h *Handler) pumpShared(w http.ResponseWriter, r *http.Request, s *session, stream string, after string) {
	rc := http.NewResponseController(w)
	ctx := r.Context()
	key := streamKey(s.info.ID, stream)
	standalone := stream == "g"
	owner, _, _ := strings.Cut(stream, ".")
	wake, leave := h.shared.waiter(key)
	defer leave()
	var (
		stop, check <-chan struct{}
		myToken     string
		ownerKey    = streamKey(s.info.ID, "gowner")
	)
	if standalone {
		var tok [8]byte
		rand.Read(tok[:])
		token := hex.EncodeToString(tok[:])
		g, release := h.shared.takeOver(s.info.ID, token)
		defer release()
		stop, check = g.stop, g.check
		// The takeover is written to the store too (only the newest
		// owner is kept), so a GET on another replica checks it before it
		// sends and stops even while the bus message telling it so is
		// still on its way: an event reaches one GET stream.
		actx, cancel := context.WithTimeout(ctx, sharedTimeout)
		if _, err := h.shared.Append(actx, ownerKey, []byte(token), 1); err != nil && ctx.Err() == nil {
			h.log.Warn("cannot record the session's GET stream's new owner in the session store", "session", s.info.ID, "error", err)
		}
		cancel()
		h.send("", busMessage(msgTakeover, s.info.ID, []byte(token)))
		myToken = token
	}

	cursor, seq := "", 0
	if standalone {
		if after == "" || after == "0" {
			cursor = h.delivered(ctx, s)
		} else {
			cursor = after
		}
	} else {
		seq, _ = strconv.Atoi(after)
	}
	startSSE(w)
	var buf []byte
	if standalone {
		buf = append(buf, "id: g-"...)
		buf = append(buf, cmp(cursor, "0")...)
		buf = append(buf, "\ndata:\n\n"...)
	} else {
		buf = appendEvent(nil, stream, seq, nil)
	}
	reqKey := ""
	poll := time.NewTicker(h.opts.SharedPoll)
	defer poll.Stop()
	idle := 0
	for {
		// A newer GET took the stream over: stop before reading on, even
		// if an event woke this one too (select would pick either, and
		// the session would get that event on both streams).
		select {
		case <-stop:
			return
		case <-check:
			if h.ownedElsewhere(ctx, ownerKey, myToken, true) {
				return
			}
		default:
		}
		sctx, cancel := context.WithTimeout(ctx, sharedTimeout)
		evs, gone, err := h.shared.After(sctx, key, cursor)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				h.log.Warn("cannot read a stream from the session store", "session", s.info.ID, "stream", stream, "error", err)
			}
			return
		}
		if gone {
			h.log.Warn("events of a stream are no longer kept; the client missed some", "session", s.info.ID, "stream", stream)
			cursor = ""
			continue
		}
		complete := false
		for _, ev := range evs {
			cursor = ev.ID
			flag, k, n, data, ok := parseStored(ev.Data)
			if !ok {
				continue
			}
			if k != "" {
				reqKey = k
			}
			if standalone {
				buf = append(buf, "id: g-"...)
				buf = append(buf, ev.ID...)
				buf = append(buf, '\n')
				buf = appendData(buf, data)
				continue
			}
			if (flag == 'f' || flag == 'F') && n <= seq {
				complete = true // the client has the answer already
			}
			if flag == 'h' || n <= seq {
				continue
			}
			switch flag {
			case 'E':
				h.log.Warn("a resumed stream misses an event the session store could not keep", "session", s.info.ID, "stream", stream, "event", n)
				seq = n
				continue
			case 'F':
				buf = appendEvent(buf, stream, n, errAnswerLost(reqKey))
				seq, complete = n, true
				continue
			}
			buf = appendEvent(buf, stream, n, data)
			seq = n
			if flag == 'f' {
				complete = true
			}
		}
		if len(evs) > 0 {
			idle = 0
		}
		if !standalone && !complete && idle >= 2 && reqKey != "" {
			// Nothing for two polls: is the replica that serves it alive?
			actx, cancel := context.WithTimeout(ctx, sharedTimeout)
			alive, err := h.shared.Alive(actx, owner)
			cancel()
			if err == nil && (!alive || owner == h.shared.replica) {
				buf = appendEvent(buf, stream, seq+1, errReplicaLost(reqKey))
				complete = true
			}
		}
		if standalone && len(evs) > 0 && h.ownedElsewhere(ctx, ownerKey, myToken, false) {
			// A newer GET owns the stream: it sends these (from what this
			// one last delivered), and this one stops unsent.
			return
		}
		if len(buf) > 0 {
			if !flushEvents(w, rc, buf) {
				return
			}
			buf = buf[:0]
			if standalone && len(evs) > 0 {
				h.markDelivered(s, cursor)
			}
		}
		if complete {
			return
		}
		select {
		case <-wake:
		case <-poll.C:
			idle++
			h.keepAlive(s) // a client that only reads keeps its session
		case <-stop:
			return // a newer GET took the stream over
		case <-check:
			if h.ownedElsewhere(ctx, ownerKey, myToken, true) {
				return
			}
		case <-ctx.Done():
			return
		case <-s.conn.done:
			return
		case <-h.ctx.Done():
			return
		}
	}
}

// ownedElsewhere reports whether the newest GET of a session's standalone
// stream, as the store has it, is another than the one with token. When
// the store does not say (no answer, no owner recorded) it answers
// unknown: before sending, a GET goes on (the bus message still stops
// it); at another replica's word that it took over, the word stands.
func (h *Handler) ownedElsewhere(ctx context.Context, ownerKey, token string, unknown bool) bool {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	evs, _, err := h.shared.After(ctx, ownerKey, "")
	if err != nil || len(evs) == 0 {
		return unknown
	}
	return string(evs[len(evs)-1].Data) != token
}

func cmp(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// delivered is the store id of the last standalone event a connection
// got, so a new GET starts after it ("" = from the first kept).
func (h *Handler) delivered(ctx context.Context, s *session) string {
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	evs, _, err := h.shared.After(ctx, streamKey(s.info.ID, "gsent"), "")
	if err != nil || len(evs) == 0 {
		return ""
	}
	return string(evs[len(evs)-1].Data)
}

func (h *Handler) markDelivered(s *session, cursor string) {
	ctx, cancel := context.WithTimeout(h.ctx, sharedTimeout)
	defer cancel()
	if _, err := h.shared.Append(ctx, streamKey(s.info.ID, "gsent"), []byte(cursor), 1); err != nil && !errors.Is(err, context.Canceled) {
		h.log.Debug("cannot record what the GET stream delivered", "session", s.info.ID, "error", err)
	}
}
