package httptransport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// exchange is one HTTP request the transport makes (retried as a whole).
type exchange struct {
	method    string
	target    *url.URL // nil: the MCP endpoint
	body      []byte
	lastID    string        // Last-Event-ID
	timeout   time.Duration // for the response headers; 0: none
	noSession bool          // initialize: neither session id nor version
	legacy    bool          // legacy HTTP+SSE: ditto
	noRetry   bool
	modern    *modernReq // a modern request: its headers, no session
}

// maxAuthRetries caps the re-authorizations of one exchange, should an
// Authorizer keep asking for retries; Challenge normally gives up first.
const maxAuthRetries = 20

// Header values shared by every request; net/http does not modify them.
var (
	acceptBoth = []string{"application/json, text/event-stream"}
	acceptSSE  = []string{"text/event-stream"}
	typeJSON   = []string{"application/json"}
)

func (c *Conn) do(ctx context.Context, x *exchange) (*http.Response, error) {
	resp, _, err := c.doTracked(ctx, x)
	return resp, err
}

// doTracked runs x with retries and returns a response with a 2xx status,
// or a typed error. It also returns the session generation the last
// attempt used, for recoverSession. The caller closes the body.
func (c *Conn) doTracked(ctx context.Context, x *exchange) (*http.Response, int, error) {
	authTries := 0 // re-authorizations; they do not use up the retry budget
	for attempt := 0; ; attempt++ {
		resp, gen, withSession, err := c.roundTrip(ctx, x)
		retry := !x.noRetry && attempt < c.cfg.retries
		if err != nil {
			if ctx.Err() != nil {
				return nil, gen, c.reqErr(x, context.Cause(ctx))
			}
			if retry && isDialError(err) {
				d := c.backoff(attempt)
				// Said at the default log level: a wait of seconds with
				// nothing on screen looks like a hang.
				c.log.Warn("cannot connect; retrying", "url", c.target(x), "in", d,
					"retry", fmt.Sprintf("%d of %d (http_max_retries)", attempt+1, c.cfg.retries), "error", err)
				if !sleep(ctx, d) {
					return nil, gen, c.reqErr(x, context.Cause(ctx))
				}
				continue
			}
			return nil, gen, c.wrapErr(x, err)
		}
		switch s := resp.StatusCode; {
		case s >= 200 && s < 300:
			if o, ok := c.cfg.Authorizer.(ResponseObserver); ok {
				o.Observe(resp)
			}
			return resp, gen, nil
		case (s == http.StatusUnauthorized || s == http.StatusForbidden) && c.cfg.Authorizer != nil && authTries < maxAuthRetries:
			again, aerr := c.cfg.Authorizer.Challenge(ctx, resp)
			if aerr != nil {
				discard(resp.Body)
				if ctx.Err() != nil {
					return nil, gen, c.reqErr(x, context.Cause(ctx))
				}
				return nil, gen, &AuthError{Server: c.cfg.Server, Method: x.method, URL: c.target(x), Status: s, Err: aerr}
			}
			if again {
				discard(resp.Body)
				authTries++
				attempt-- // the next attempt is a new authorization, not a retry
				c.log.Debug("re-authorized; sending the request again", "status", s, "method", x.method)
				continue
			}
		case s >= 300 && s < 400 && s != http.StatusNotModified:
			loc := resp.Header.Get("Location")
			discard(resp.Body)
			if u, err := resp.Request.URL.Parse(loc); err == nil {
				loc = redactURL(u)
			}
			return nil, gen, &RedirectError{Server: c.cfg.Server, Method: x.method, URL: c.target(x), Status: s, Location: cutText(loc, 200)}
		case s == http.StatusTooManyRequests || s == http.StatusBadGateway || s == http.StatusServiceUnavailable || s == http.StatusGatewayTimeout:
			if retry {
				d := retryAfter(resp.Header, c.backoff(attempt))
				discard(resp.Body)
				c.log.Warn("server busy; retrying", "url", c.target(x), "status", s, "in", d,
					"retry", fmt.Sprintf("%d of %d (http_max_retries)", attempt+1, c.cfg.retries))
				if !sleep(ctx, d) {
					return nil, gen, c.reqErr(x, context.Cause(ctx))
				}
				continue
			}
		case s == http.StatusNotFound && withSession:
			discard(resp.Body)
			return nil, gen, &SessionExpiredError{Server: c.cfg.Server, URL: c.shown}
		}
		if s := resp.StatusCode; x.modern != nil && s >= 400 && s < 500 {
			return nil, gen, c.modernStatusErr(x, resp)
		}
		return nil, gen, c.statusErr(x, resp)
	}
}

// roundTrip sends x once. The response body, when there is one, cancels
// the exchange's context when closed: closing is how a stream reader that
// is blocked in Read gets out.
func (c *Conn) roundTrip(ctx context.Context, x *exchange) (resp *http.Response, gen int, withSession bool, err error) {
	var body io.Reader
	if x.body != nil {
		body = bytes.NewReader(x.body)
	}
	// A context of its own only for an exchange with a timeout, whose
	// cause the error must name; otherwise ctx already ends it.
	tctx, cancel := ctx, context.CancelCauseFunc(func(error) {})
	if x.timeout > 0 {
		tctx, cancel = context.WithCancelCause(ctx)
	}
	req, err := c.newRequest(tctx, x, body)
	if err != nil {
		cancel(nil)
		return nil, 0, false, err
	}
	h := req.Header
	for k, v := range c.hdr {
		h[k] = v
	}
	switch x.method {
	case http.MethodPost:
		h["Accept"] = acceptBoth
		h["Content-Type"] = typeJSON
	case http.MethodGet:
		h["Accept"] = acceptSSE
	}
	c.mu.Lock()
	sid, version := c.session, c.version
	gen = c.gen
	c.mu.Unlock()
	if x.modern != nil {
		x.modern.setHeaders(h)
	} else if !x.noSession && !x.legacy {
		if sid != "" {
			h["Mcp-Session-Id"] = []string{sid}
			withSession = true
		}
		if version != "" {
			h["Mcp-Protocol-Version"] = []string{version}
		}
	}
	if x.lastID != "" {
		h["Last-Event-Id"] = []string{x.lastID}
	}
	if a := c.cfg.Authorizer; a != nil {
		if err := a.Authorize(ctx, req); err != nil {
			cancel(nil)
			return nil, gen, withSession, &authorizeError{err}
		}
	}
	var timer *time.Timer
	if x.timeout > 0 {
		timer = time.AfterFunc(x.timeout, func() { cancel(&timeoutError{what: "response", after: x.timeout}) })
	}
	resp, err = c.send(req)
	if timer != nil && err == nil && !isStream(resp) {
		// A JSON reply is read under the same limit as its headers: a
		// server that sends headers and then a byte a second must not
		// hold the caller. (A stream's messages are bounded by the calls
		// they answer.)
		if tctx.Err() == nil {
			resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel, ctx: tctx, timer: timer}
			return resp, gen, withSession, nil
		}
	}
	if timer != nil && !timer.Stop() {
		// The timer fired: whatever Do returned, the exchange timed out.
		if err == nil {
			resp.Body.Close()
		}
		cancel(nil)
		return nil, gen, withSession, context.Cause(tctx)
	}
	if err != nil {
		if cause := context.Cause(tctx); cause != nil && ctx.Err() == nil {
			err = cause
		}
		cancel(nil)
		return nil, gen, withSession, err
	}
	if x.timeout > 0 {
		resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	} else {
		cancel(nil) // a no-op: tctx is ctx, which the caller ends
	}
	return resp, gen, withSession, nil
}

// newRequest makes x's request with the URL parsed once, at Dial (the
// MCP endpoint's) or when the legacy endpoint was announced.
func (c *Conn) newRequest(ctx context.Context, x *exchange, body io.Reader) (*http.Request, error) {
	u := c.url
	if x.target != nil {
		u = x.target
	}
	// "" parses to an empty URL at no cost; the shared one replaces it.
	// Nothing downstream writes to a request's URL.
	req, err := http.NewRequestWithContext(ctx, x.method, "", body)
	if err != nil {
		return nil, err
	}
	req.URL, req.Host = u, u.Host
	return req, nil
}

// send runs req through the round tripper without an http.Client: the
// Client would copy the headers of every request for redirects, which
// are never followed here (a 3xx comes back as it is and becomes a
// *RedirectError). What else it did for these requests is done here:
// credentials in the URL become basic authorization.
func (c *Conn) send(req *http.Request) (*http.Response, error) {
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		pw, _ := u.Password()
		req.SetBasicAuth(u.Username(), pw)
	}
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelCauseFunc
	ctx    context.Context // set with timer: a read that fails says why
	timer  *time.Timer     // the exchange's limit, still running while the body is read
}

var errBodyClosed = errors.New("response body closed")

func (b *cancelBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && b.ctx != nil {
		if cause := context.Cause(b.ctx); cause != nil && !errors.Is(cause, errBodyClosed) {
			err = cause // the timeout (or the caller's cancellation), not "context canceled"
		}
	}
	return n, err
}

func (b *cancelBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	b.cancel(errBodyClosed)
	return b.ReadCloser.Close()
}

func (c *Conn) target(x *exchange) string {
	if x.target != nil {
		return redactURL(x.target)
	}
	return c.shown
}

// wrapErr turns a client error into the transport's types. url.Error is
// unwrapped because its text repeats the URL unredacted.
func (c *Conn) wrapErr(x *exchange, err error) error {
	var blocked *BlockedAddressError
	if errors.As(err, &blocked) {
		b := *blocked
		b.Server, b.URL = c.cfg.Server, c.target(x)
		return &b
	}
	return c.reqErr(x, err)
}

func (c *Conn) reqErr(x *exchange, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &RequestError{Server: c.cfg.Server, Method: x.method, URL: c.target(x), Err: err}
}

// statusErr builds an *HTTPStatusError with an excerpt of the body.
func (c *Conn) statusErr(x *exchange, resp *http.Response) error {
	stop := time.AfterFunc(c.cfg.Timeout, func() { resp.Body.Close() })
	ex := c.scrub(excerpt(resp.Body))
	stop.Stop()
	resp.Body.Close()
	return &HTTPStatusError{Server: c.cfg.Server, Method: x.method, URL: c.target(x), Status: resp.StatusCode, BodyExcerpt: ex, Header: resp.Header}
}

// readReply reads a non-stream reply: nil for 202 or an empty body, the
// message for a JSON body. Everything else is an error.
func (c *Conn) readReply(resp *http.Response, method string) ([]byte, error) {
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent || resp.ContentLength == 0 {
		return nil, nil
	}
	ct := resp.Header.Get("Content-Type")
	if !isMedia(ct, "application/json") {
		return nil, &UnexpectedResponseError{Server: c.cfg.Server, Method: method, URL: c.shown, ContentType: ct, BodyExcerpt: c.scrub(excerpt(resp.Body))}
	}
	limit := c.cfg.MaxMessageSize
	if resp.ContentLength > int64(limit) {
		return nil, &BodyTooLargeError{Server: c.cfg.Server, URL: c.shown, Limit: limit}
	}
	var buf []byte
	var err error
	if resp.ContentLength > 0 {
		buf = make([]byte, resp.ContentLength)
		_, err = io.ReadFull(resp.Body, buf)
	} else {
		// Unknown length: never read past the limit.
		buf, err = io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
		if err == nil && len(buf) > limit {
			return nil, &BodyTooLargeError{Server: c.cfg.Server, URL: c.shown, Limit: limit}
		}
	}
	if err != nil {
		return nil, &RequestError{Server: c.cfg.Server, Method: method, URL: c.shown, Err: err}
	}
	trimmed := bytes.TrimLeft(buf, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] != '{' {
		// A JSON-RPC message is an object; this is an error page or junk.
		return nil, &UnexpectedResponseError{Server: c.cfg.Server, Method: method, URL: c.shown, ContentType: ct, BodyExcerpt: c.scrub(sanitizeExcerpt(trimmed))}
	}
	return buf, nil
}

func isStream(resp *http.Response) bool {
	return isMedia(resp.Header.Get("Content-Type"), "text/event-stream")
}

func isMedia(ct, want string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), want)
}

// discard reads a little of what is left, so that the connection can be
// reused, and closes the body.
func discard(body io.ReadCloser) {
	stop := time.AfterFunc(time.Second, func() { body.Close() })
	io.Copy(io.Discard, io.LimitReader(body, 16<<10))
	stop.Stop()
	body.Close()
}

// backoff is the wait before retry attempt+1: RetryBackoff doubled per
// attempt, capped, with "equal jitter" (half fixed, half random) so that
// many clients retrying after the same outage spread out.
func (c *Conn) backoff(attempt int) time.Duration {
	d := MaxRetryDelay
	if attempt < 20 {
		if b := c.cfg.RetryBackoff << attempt; b > 0 && b < MaxRetryDelay {
			d = b
		}
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads Retry-After (seconds or an HTTP date), capped at
// MaxRetryDelay; def when absent or unreadable.
func retryAfter(h http.Header, def time.Duration) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return def
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return def
		}
		d = MaxRetryDelay
		if secs < int64(MaxRetryDelay/time.Second) {
			d = time.Duration(secs) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = max(time.Until(t), 0)
	} else {
		return def
	}
	return min(d, MaxRetryDelay)
}

// sleep waits d unless ctx ends first (then false).
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// scrub masks configured header values (and their words, such as the
// token after "Bearer") in server-controlled text: a server that echoes a
// rejected credential into its error page must not get it into our logs.
func (c *Conn) scrub(s string) string {
	for _, vs := range c.hdr {
		for _, v := range vs {
			if len(v) >= 4 {
				s = strings.ReplaceAll(s, v, diag.Mask)
			}
			for _, word := range strings.Fields(v) {
				if len(word) >= 8 {
					s = strings.ReplaceAll(s, word, diag.Mask)
				}
			}
		}
	}
	return s
}
