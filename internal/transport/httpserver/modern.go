package httpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/wire"
)

// The stateless revision (2026-07-28) on the same endpoint; see the
// package doc for the contract with the serve functions.

// maxModernSessions bounds the internal sessions of one principal: a new
// one is made only when every other has a request in flight under the
// same JSON-RPC id (two clients of one principal both on id 1).
const maxModernSessions = 16

// isModernPost says whether a request is in the stateless era: a POST
// whose MCP-Protocol-Version is a modern version, or (without a session)
// one that names no version Nexus speaks in the handshake era, which gets
// UnsupportedProtocolVersion.
func isModernPost(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	if mcp.IsModern(v) {
		return true
	}
	return v != "" && r.Header.Get("Mcp-Session-Id") == "" && !slices.Contains(mcp.SupportedVersions, v)
}

// modernError is a refusal of a modern request before it is served: an
// HTTP status and the JSON-RPC error.
type modernError struct {
	status int
	err    *mcp.RPCError
}

// checkModern validates a modern request's version, its _meta and its
// headers against its body (MCP-Protocol-Version against _meta,
// Mcp-Method, Mcp-Name), and returns its Mcp-Param-* headers decoded
// (lower-case names, no prefix; nil when it has none).
func checkModern(hd http.Header, m incoming) (map[string]string, *modernError) {
	mismatch := func(format string, args ...any) *modernError {
		return &modernError{http.StatusBadRequest, mcp.HeaderMismatch(format, args...)}
	}
	// The headers by their canonical names (net/http canonicalizes what
	// it reads): hd.Get would canonicalize the key on every call.
	v := first(hd["Mcp-Protocol-Version"])
	if v == "" {
		return nil, mismatch("the MCP-Protocol-Version header is missing")
	}
	if !mcp.IsModern(v) {
		e := mcp.UnsupportedProtocolVersion(v, mcp.AllVersions)
		e.Message = "unsupported MCP-Protocol-Version " + strconv.Quote(v) + "; this server speaks " + strings.Join(mcp.AllVersions, ", ")
		return nil, &modernError{http.StatusBadRequest, e}
	}
	// One pass over _meta for both members (parseIncoming found it).
	var rawVer, rawCaps []byte
	wire.ValidMembers(m.Meta, func(k, v []byte) error {
		switch {
		case rawVer == nil && wire.KeyIs(k, mcp.MetaProtocolVersion):
			rawVer = v
		case rawCaps == nil && wire.KeyIs(k, mcp.MetaClientCapabilities):
			rawCaps = v
		}
		return nil
	})
	if rawVer == nil || rawCaps == nil {
		return nil, &modernError{http.StatusBadRequest, mcp.InvalidParams("params._meta must carry %q and %q on every request of %s (the version and the client's capabilities, {} for none)",
			mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, v)}
	}
	if !jsonStringIs(rawVer, v) {
		ver, err := wire.Unquote(rawVer)
		if err != nil || ver == "" {
			return nil, &modernError{http.StatusBadRequest, mcp.InvalidParams("params._meta[%q] must be a non-empty string", mcp.MetaProtocolVersion)}
		}
		return nil, mismatch("the MCP-Protocol-Version header is %q but params._meta[%q] is %q; send the same version in both", v, mcp.MetaProtocolVersion, ver)
	}
	if got := first(hd["Mcp-Method"]); got != m.Method {
		if got == "" {
			return nil, mismatch("the Mcp-Method header is missing; it must repeat the body's method %q", m.Method)
		}
		return nil, mismatch("the Mcp-Method header is %q but the body's method is %q", got, m.Method)
	}
	var key string
	switch m.Method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		key = "name"
	case mcp.MethodResourcesRead:
		key = "uri"
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		key = "taskId" // the tasks extension's routing header
	}
	if key != "" {
		rawWant := mcp.Member(m.Params, key)
		raw := hd["Mcp-Name"]
		if len(raw) != 1 {
			return nil, mismatch("%s needs exactly one Mcp-Name header (params.%s), not %d", m.Method, key, len(raw))
		}
		got, err := mcp.DecodeHeaderValue(raw[0])
		if err != nil {
			return nil, mismatch("Mcp-Name: %v", err)
		}
		if !jsonStringIs(rawWant, got) {
			want, _ := wire.Unquote(rawWant)
			return nil, mismatch("the Mcp-Name header is %q but params.%s is %q", got, key, want)
		}
	}
	var params map[string]string
	for name, vals := range hd {
		if len(name) <= len(paramPrefix) || !strings.EqualFold(name[:len(paramPrefix)], paramPrefix) {
			continue
		}
		if len(vals) != 1 {
			return nil, mismatch("%s appears %d times; send it once", name, len(vals))
		}
		got, err := mcp.DecodeHeaderValue(vals[0])
		if err != nil {
			return nil, mismatch("%s: %v", name, err)
		}
		if params == nil {
			params = map[string]string{}
		}
		params[strings.ToLower(name[len(paramPrefix):])] = got // the suffix alone: one allocation
	}
	return params, nil
}

const paramPrefix = "mcp-param-"

// jsonStringIs reports whether raw is a JSON string whose value is s,
// without decoding it when it has no escapes (the usual case).
func jsonStringIs(raw []byte, s string) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	if in := raw[1 : len(raw)-1]; bytes.IndexByte(in, '\\') < 0 {
		return string(in) == s
	}
	got, err := wire.Unquote(raw)
	return err == nil && got == s
}

func first(vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	return vals[0]
}

// postModern serves one modern POST: checked before any serve function
// sees it, then served on its principal's internal session and answered
// on its own response (JSON, or an SSE stream scoped to it).
func (h *Handler) postModern(w http.ResponseWriter, r *http.Request, principal string) {
	if !accepts(r, "application/json") || !accepts(r, "text/event-stream") {
		unread(w, r)
		rpcError(w, http.StatusNotAcceptable, mcp.CodeInvalidRequest, "Accept must list application/json and text/event-stream")
		return
	}
	body, m, ok := h.readBody(w, r)
	if !ok {
		return
	}
	if m.Method == "" {
		rpcError(w, http.StatusBadRequest, mcp.CodeInvalidRequest, "a client sends no responses in "+mcp.Version20260728+": the server asks for input with input_required results")
		return
	}
	if !m.hasID() {
		// The revision defines no client notifications over HTTP
		// (closing a stream cancels its request): accepted and dropped.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	params, bad := checkModern(r.Header, m)
	if bad != nil {
		writeStatus(w, bad.status, errorMessage(m.ID, bad.err))
		return
	}
	s, st, err := h.modernStream(principal, m, params)
	if err != nil {
		refuseSession(w, err)
		return
	}
	defer s.leave()
	if !h.admit(w, s) {
		s.conn.abandon(st)
		return
	}
	defer h.release(s)
	held := 2 * int64(len(body))
	if !h.hold(w, r, s, held) {
		s.conn.abandon(st)
		return
	}
	defer h.charge(s, st, held, len(body))()
	h.deliver(w, r, s, st, body, http.StatusServiceUnavailable, mcp.CodeInternalError, "the server side of this request ended; retry")
}

// modernStream finds the principal's internal session on which the
// request's id is free (making one when none is), opens the request's
// stream there and enters the session (the caller leaves it). Under h.mu,
// so the idle sweep cannot end the session in between.
func (h *Handler) modernStream(principal string, m incoming, params map[string]string) (*session, *stream, error) {
	h.mu.Lock()
	for _, s := range h.modern[principal] {
		if st := s.conn.openFree(m.ID, m.ProgressToken, params); st != nil {
			s.enter()
			h.mu.Unlock()
			return s, st, nil
		}
	}
	h.mu.Unlock()
	s, err := h.newModern(principal)
	if err != nil {
		return nil, nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if st := s.conn.openFree(m.ID, m.ProgressToken, params); st != nil {
		s.enter()
		return s, st, nil
	}
	return nil, nil, errors.New("the new internal session ended before it could take the request; retry")
}

// newModern starts an internal session for a principal's modern
// requests. It is never named to the client and never stored.
func (h *Handler) newModern(principal string) (*session, error) {
	var raw [8]byte
	rand.Read(raw[:])
	s := &session{info: Session{ID: "modern-" + hex.EncodeToString(raw[:]), Principal: principal, Modern: true}, conn: newSessionConn(&h.opts, false)}
	s.conn.modern = true
	c, _ := h.perReq.LoadOrStore(principal, new(atomic.Int64))
	s.principalReqs = c.(*atomic.Int64)
	s.conn.log = h.log.With("session", s.info.ID)
	s.touch()
	ctx, cancel := context.WithCancel(h.ctx)
	s.cancel = cancel
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		cancel()
		return nil, errors.New("the server is shutting down")
	}
	if len(h.modern[principal]) >= maxModernSessions {
		h.mu.Unlock()
		cancel()
		return nil, &LimitError{Status: http.StatusTooManyRequests, Message: fmt.Sprintf("too many requests in flight for %q under the same JSON-RPC ids; give concurrent requests distinct ids", principal)}
	}
	if h.modern == nil {
		h.modern = map[string][]*session{}
	}
	h.modern[principal] = append(h.modern[principal], s)
	if !h.janitor {
		h.janitor = true
		h.wg.Add(1)
		go h.sweep()
	}
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		err := h.serve(ctx, s.conn, &s.info)
		s.conn.Close()
		h.dropModern(s)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, mcp.ErrClosed) {
			h.log.Debug("internal modern session ended", "session", s.info.ID, "error", err)
		}
	}()
	return s, nil
}

// dropModern forgets an internal session that ended.
func (h *Handler) dropModern(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := h.modern[s.info.Principal]
	if i := slices.Index(list, s); i >= 0 {
		list = slices.Delete(list, i, i+1)
	}
	if len(list) == 0 {
		delete(h.modern, s.info.Principal)
	} else {
		h.modern[s.info.Principal] = list
	}
}

// sweepModern ends internal sessions idle since cutoff. Called with h.mu held.
func (h *Handler) sweepModern(cutoff int64) {
	for p, list := range h.modern {
		kept := list[:0]
		for _, s := range list {
			if s.active.Load() == 0 && s.used.Load() < cutoff {
				s.end()
				continue
			}
			kept = append(kept, s)
		}
		if len(kept) == 0 {
			delete(h.modern, p)
		} else {
			h.modern[p] = kept
		}
	}
}

// openFree opens a request's stream unless a request with its id is in
// flight here; params are its Mcp-Param-* headers (ParamHeaders).
func (sc *sessionConn) openFree(id, token json.RawMessage, params map[string]string) *stream {
	sc.mu.Lock()
	if sc.byReq[idKey(id)] != nil {
		sc.mu.Unlock()
		return nil
	}
	select {
	case <-sc.done:
		sc.mu.Unlock()
		return nil
	default:
	}
	sc.mu.Unlock()
	st := sc.open(id, token)
	st.modern = true
	sc.mu.Lock()
	if sc.params == nil {
		sc.params = map[string]map[string]string{}
	}
	sc.params[st.key] = params
	sc.mu.Unlock()
	return st
}

// ParamHeaders implements mcp.ParamHeaderConn: the Mcp-Param-* headers
// of a modern request in flight.
func (sc *sessionConn) ParamHeaders(id json.RawMessage) (map[string]string, bool) {
	if !sc.modern || id == nil {
		return nil, false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	p, ok := sc.params[idKey(id)]
	return p, ok
}

// answerStatus is the HTTP status of a modern request's JSON answer: 400
// for the errors the spec sends with it (header mismatch, missing
// capability, unsupported version, invalid _meta), 404 for an unknown
// method, else 200.
func answerStatus(data []byte) int {
	code := mcp.Member(mcp.Member(data, "error"), "code")
	switch string(bytes.TrimSpace(code)) {
	case "":
		return http.StatusOK
	case "-32020", "-32021", "-32022":
		return http.StatusBadRequest
	case "-32601":
		return http.StatusNotFound
	}
	return http.StatusOK
}

// writeStatus writes a JSON answer with a status.
func writeStatus(w http.ResponseWriter, status int, data []byte) {
	hd := w.Header()
	hd["Content-Type"] = jsonType
	hd["Content-Length"] = []string{fmt.Sprint(len(data))}
	w.WriteHeader(status)
	w.Write(data)
}

// keepAlive is the SSE comment a modern stream sends when quiet.
var keepAliveComment = []byte(":\n\n")

// keepAliveTimer returns a channel that fires every KeepAlive on a modern
// stream (nil otherwise) and its stop.
func (h *Handler) keepAliveTimer(modern bool) (<-chan time.Time, func()) {
	if !modern || h.opts.KeepAlive <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(h.opts.KeepAlive)
	return t.C, t.Stop
}
