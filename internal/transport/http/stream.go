package httptransport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// cursor is where a stream is: the last event id (for Last-Event-ID) and
// the server's reconnection delay.
type cursor struct {
	last  string
	retry time.Duration
}

// consume flags.
const (
	isInit          = 1 << iota // the stream answers initialize: note the version
	swallowResponse             // keep the response from the peer (re-initialize)
)

// drainWait bounds reading on after a stream's response: the server
// should end the stream then, and reading its end lets the connection be
// reused.
const drainWait = 100 * time.Millisecond

// consume reads events from r and delivers their messages. With a key it
// returns right after the response with that id (got), and the messages
// before it go out as that request's (mcp.RelatedFramer). progressed says
// whether anything arrived (an id or a message), which resets the resume
// budget.
func (c *Conn) consume(ctx context.Context, r *SSEReader, key string, cur *cursor, flags int) (progressed, got bool, err error) {
	var rel json.RawMessage // made for the first message that is not the response
	for {
		ev, err := r.Next()
		if err != nil {
			var tl *mcp.FrameTooLargeError
			if errors.As(err, &tl) {
				return progressed, false, &BodyTooLargeError{Server: c.cfg.Server, URL: c.shown, Limit: tl.Limit}
			}
			return progressed, false, err
		}
		if ev.HasID {
			cur.last = ev.ID
			progressed = true
		}
		if ev.Retry > 0 {
			cur.retry = ev.Retry
		}
		if len(ev.Data) == 0 || (ev.Type != "" && ev.Type != "message") {
			continue // a priming event, a keep-alive, or a type MCP does not use
		}
		progressed = true
		isResp := false
		if key != "" {
			// The single-pass scan, not encoding/json: every event of a
			// reply is looked at, and a large result was decoded twice.
			m, err := mcp.ParseMessage(ev.Data)
			isResp = err == nil && m.IsResponse() && idKey(m.ID) == key
		}
		if isResp && flags&isInit != 0 {
			c.noteVersion(ev.Data)
		}
		if isResp && flags&swallowResponse != 0 {
			return progressed, true, nil
		}
		if key != "" && !isResp && rel == nil {
			rel = idOfKey(key)
		}
		if err := c.deliverOn(ev.Data, rel); err != nil {
			return progressed, false, err
		}
		if isResp {
			return progressed, true, nil
		}
	}
}

// follow reads the SSE reply to a request until its response arrived. A
// stream that breaks off is resumed with GET and Last-Event-ID, after the
// server's retry delay (capped) or a backoff; SEP-1699 servers close
// streams on purpose after an event id, so a resumption that makes
// progress does not count against the retry budget.
// A modern request's stream (modern) is never resumed: the spec dropped
// resumability, so a break loses the request (see modern.go).
func (c *Conn) follow(ctx context.Context, resp *http.Response, key string, init, modern bool) error {
	flags := 0
	if init {
		flags = isInit
	}
	var cur cursor
	body := resp.Body
	fails := 0
	var lastErr error
	for {
		if body != nil {
			r := NewSSEReader(body, c.cfg.MaxMessageSize)
			progressed, got, err := c.consume(ctx, r, key, &cur, flags)
			if got {
				c.drainStream(body, r)
				r.Release()
				return nil
			}
			body.Close()
			r.Release()
			body = nil
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, mcp.ErrClosed), isFatal(err):
				return err
			case key == "":
				return nil // no response expected
			}
			lastErr = err
			if progressed {
				fails = 0
			}
		}
		if cur.last == "" || modern {
			return &RequestError{Server: c.cfg.Server, Method: http.MethodPost, URL: c.shown, Err: &streamEndedError{id: key[2:], err: lastErr, modern: modern}}
		}
		fails++
		if fails > c.cfg.retries+1 {
			return &RequestError{Server: c.cfg.Server, Method: http.MethodGet, URL: c.shown,
				Err: fmt.Errorf("resuming the SSE stream for request %s failed %d times in a row: %w", key[2:], fails-1, lastErr)}
		}
		if !sleep(ctx, c.reconnectDelay(cur.retry, fails)) {
			return ctx.Err()
		}
		c.log.Debug("resuming SSE stream", "request", key[2:], "attempt", fails)
		resp, err := c.do(ctx, &exchange{method: http.MethodGet, lastID: cur.last, timeout: c.cfg.Timeout})
		if err != nil {
			if isFatal(err) || ctx.Err() != nil {
				return err
			}
			var se *HTTPStatusError
			if errors.As(err, &se) && se.Status == http.StatusMethodNotAllowed {
				return &RequestError{Server: c.cfg.Server, Method: http.MethodGet, URL: c.shown,
					Err: fmt.Errorf("the SSE stream for request %s broke off and the server does not allow GET to resume it: %w", key[2:], err)}
			}
			lastErr = err
			continue
		}
		if !isStream(resp) {
			ct := resp.Header.Get("Content-Type")
			discard(resp.Body)
			lastErr = &UnexpectedResponseError{Server: c.cfg.Server, Method: http.MethodGet, URL: c.shown, ContentType: ct}
			continue
		}
		body = resp.Body
	}
}

// drainStream reads what follows a response, briefly, then closes.
func (c *Conn) drainStream(body interface{ Close() error }, r *SSEReader) {
	t := time.AfterFunc(drainWait, func() { body.Close() })
	defer t.Stop()
	defer body.Close()
	for {
		ev, err := r.Next()
		if err != nil {
			return
		}
		if len(ev.Data) > 0 && (ev.Type == "" || ev.Type == "message") {
			if c.deliver(ev.Data) != nil {
				return
			}
		}
	}
}

// reconnectDelay is the wait before resume attempt n (1-based).
func (c *Conn) reconnectDelay(retry time.Duration, n int) time.Duration {
	if retry > 0 {
		return min(retry, MaxRetryDelay)
	}
	return c.backoff(n - 1)
}

// listenGrace bounds the wait for the standalone stream's response
// headers once its request is on the wire; listenWait bounds the whole
// wait. A server that holds the headers back until its first event costs
// a connection at most listenGrace.
const (
	listenGrace = time.Second
	listenWait  = 5 * time.Second
)

// listen starts the standalone GET stream once and waits until it is open
// (its response headers arrived, whatever the status) or clearly slow.
// Servers send requests that belong to no client request (an elicitation
// from inside a tool, in some SDKs) only on an open standalone stream and
// drop them otherwise, so the next request must not overtake the GET.
func (c *Conn) listen() {
	c.mu.Lock()
	if c.listening || c.legacyURL != nil {
		c.mu.Unlock()
		return
	}
	c.listening = true
	c.mu.Unlock()
	opened := make(chan struct{})
	wrote := make(chan struct{})
	if !c.spawn(func() { c.listenLoop(opened, wrote) }) {
		return
	}
	total := time.NewTimer(listenWait)
	defer total.Stop()
	select {
	case <-opened:
		return
	case <-wrote:
	case <-total.C:
		return
	case <-c.ctx.Done():
		return
	}
	grace := time.NewTimer(listenGrace)
	defer grace.Stop()
	select {
	case <-opened:
	case <-grace.C:
		c.log.Debug("the standalone SSE stream sent no headers yet; going on")
	case <-total.C:
	case <-c.ctx.Done():
	}
}

// listenLoop keeps the standalone GET stream open for server-initiated
// requests and notifications, reconnecting (with Last-Event-ID) when it
// ends, until the Conn closes or the server says it has no such stream.
// opened is closed when the first GET got an answer (or failed), wrote
// when its request was sent.
func (c *Conn) listenLoop(opened, wrote chan struct{}) {
	var openOnce, wroteOnce sync.Once
	markOpened := func() { openOnce.Do(func() { close(opened) }) }
	defer markOpened()
	first := httptrace.WithClientTrace(c.ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wroteOnce.Do(func() { close(wrote) }) },
	})
	var cur cursor
	fails := 0
	for c.ctx.Err() == nil {
		ctx := c.ctx
		if first != nil {
			ctx, first = first, nil
		}
		resp, gen, err := c.doTracked(ctx, &exchange{method: http.MethodGet, lastID: cur.last, timeout: c.cfg.Timeout})
		markOpened()
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			var se *HTTPStatusError
			var exp *SessionExpiredError
			switch {
			case errors.As(err, &exp):
				if c.recoverSession(gen) != nil {
					return
				}
				cur = cursor{}
				continue
			case isFatal(err):
				c.fail(err)
				return
			case errors.As(err, &se) && se.Status == http.StatusMethodNotAllowed:
				c.log.Debug("the server offers no standalone SSE stream (GET: 405)")
				return
			case errors.As(err, &se) && se.Status >= 400 && se.Status < 500 && se.Status != http.StatusRequestTimeout && se.Status != http.StatusTooManyRequests:
				c.log.Warn("the standalone SSE stream was refused; server-initiated messages outside requests will not arrive", "error", err)
				return
			}
			fails++
			c.log.Debug("standalone SSE stream failed; reconnecting", "attempt", fails, "error", err)
			if !sleep(c.ctx, c.backoff(fails-1)) {
				return
			}
			continue
		}
		if !isStream(resp) {
			c.log.Warn("GET answered without an event stream; server-initiated messages outside requests will not arrive", "content_type", resp.Header.Get("Content-Type"))
			discard(resp.Body)
			return
		}
		r := NewSSEReader(resp.Body, c.cfg.MaxMessageSize)
		progressed, _, err := c.consume(c.ctx, r, "", &cur, 0)
		resp.Body.Close()
		r.Release()
		if c.ctx.Err() != nil {
			return
		}
		if isFatal(err) {
			c.fail(err)
			return
		}
		if progressed {
			fails = 0
		}
		fails++
		c.log.Debug("standalone SSE stream ended; reconnecting", "error", err)
		if !sleep(c.ctx, c.reconnectDelay(cur.retry, fails)) {
			return
		}
	}
}
