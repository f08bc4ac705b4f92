package httptransport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The 2024-11-05 HTTP+SSE transport: the client opens an SSE stream with
// GET, the server's first event ("endpoint") names the URL to POST messages
// to, and every server message arrives on that one stream. There are no
// session headers and no resumption: when the stream ends, the session ends.

// openLegacy opens the stream and waits (at most Timeout) for the endpoint.
func (c *Conn) openLegacy(ctx context.Context) error {
	lctx, lcancel := context.WithCancel(c.ctx)
	stop := context.AfterFunc(ctx, lcancel) // the caller may give up until the endpoint is known
	defer stop()
	resp, err := c.do(lctx, &exchange{method: http.MethodGet, timeout: c.cfg.Timeout, legacy: true})
	if err != nil {
		lcancel()
		return err
	}
	if !isStream(resp) {
		ct := resp.Header.Get("Content-Type")
		ex := c.scrub(excerpt(resp.Body))
		resp.Body.Close()
		lcancel()
		return &UnexpectedResponseError{Server: c.cfg.Server, Method: http.MethodGet, URL: c.shown, ContentType: ct, BodyExcerpt: ex}
	}
	found := make(chan error, 1)
	if !c.spawn(func() {
		defer lcancel()
		defer resp.Body.Close()
		c.legacyStream(resp, found)
	}) {
		resp.Body.Close()
		lcancel()
		return mcp.ErrClosed
	}
	timer := time.NewTimer(c.cfg.Timeout)
	defer timer.Stop()
	select {
	case err := <-found:
		if err != nil {
			lcancel()
		}
		return err
	case <-timer.C:
		lcancel()
		return &RequestError{Server: c.cfg.Server, Method: http.MethodGet, URL: c.shown, Err: &timeoutError{what: "endpoint event on the legacy SSE stream", after: c.cfg.Timeout}}
	case <-ctx.Done():
		lcancel()
		return ctx.Err()
	}
}

// legacyClosedError says the legacy stream ended; a clean end unwraps to
// io.EOF, which mcp.Conn defines as a clean close.
type legacyClosedError struct{ err error }

func (e *legacyClosedError) Error() string {
	if e.err == nil || errors.Is(e.err, io.EOF) {
		return "the server closed the SSE stream, which ends a legacy HTTP+SSE session"
	}
	return "the SSE stream broke off, which ends a legacy HTTP+SSE session: " + e.err.Error()
}

func (e *legacyClosedError) Unwrap() error { return e.err }

func (c *Conn) legacyStream(resp *http.Response, found chan<- error) {
	r := NewSSEReader(resp.Body, c.cfg.MaxMessageSize)
	defer r.Release()
	announced := false
	for {
		ev, err := r.Next()
		if err != nil {
			var tl *mcp.FrameTooLargeError
			if errors.As(err, &tl) {
				err = &BodyTooLargeError{Server: c.cfg.Server, URL: c.shown, Limit: tl.Limit}
			} else {
				err = &RequestError{Server: c.cfg.Server, Method: http.MethodGet, URL: c.shown, Err: &legacyClosedError{err}}
			}
			if !announced {
				found <- err
				return
			}
			if c.ctx.Err() == nil {
				c.fail(err)
			}
			return
		}
		if !announced {
			if ev.Type != "endpoint" {
				continue // nothing may be sent before the endpoint is known
			}
			u, err := c.endpointURL(ev.Data)
			if err == nil {
				c.mu.Lock()
				c.legacyURL = u
				c.mu.Unlock()
				announced = true
			}
			found <- err
			if err != nil {
				return
			}
			continue
		}
		if len(ev.Data) == 0 || (ev.Type != "" && ev.Type != "message") {
			continue
		}
		if c.deliver(ev.Data) != nil {
			return
		}
	}
}

// endpointURL resolves the endpoint event against the stream's URL and
// insists on the same origin: a server must not be able to send the host's
// messages (and configured headers) elsewhere.
func (c *Conn) endpointURL(data []byte) (*url.URL, error) {
	s := strings.TrimSpace(string(data))
	u, err := c.url.Parse(s)
	if err != nil || s == "" {
		return nil, &ProtocolError{Server: c.cfg.Server, URL: c.shown, Problem: fmt.Sprintf("the legacy SSE endpoint event holds no usable URL (%q)", cutText(s, 100))}
	}
	if u.Scheme != c.url.Scheme || !strings.EqualFold(u.Host, c.url.Host) {
		return nil, &ProtocolError{Server: c.cfg.Server, URL: c.shown, Problem: fmt.Sprintf("the legacy SSE endpoint event names %s, another origin than the stream's; refusing to send messages there", cutText(redactURL(u), 200))}
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// legacySend posts one message to the endpoint; answers come on the stream.
func (c *Conn) legacySend(ctx context.Context, msg []byte) error {
	c.mu.Lock()
	u := c.legacyURL
	c.mu.Unlock()
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	resp, err := c.do(pctx, &exchange{method: http.MethodPost, target: u, body: msg, timeout: c.cfg.Timeout, legacy: true})
	if err != nil {
		if c.ctx.Err() != nil {
			return c.stopped()
		}
		if isFatal(err) {
			c.fail(err)
		}
		return err
	}
	discard(resp.Body)
	return nil
}
