package httptransport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"sync"
	"time"
)

// h1 is the round tripper of every exchange: it runs a plain-http POST
// with a small body itself, on the calling goroutine, and hands everything
// else (TLS, the GET stream, DELETE, bodies over h1MaxBody) to net/http's
// Transport.
//
// Why: net/http's HTTP/1.1 client hands each request to a writer goroutine
// of the connection and each response back from a reader goroutine. For a
// small tools/call those two hand-offs cost more than the rest of the
// client together (a POST on loopback: 24 against 17 µs). Here the caller
// writes the request and reads the answer itself; the response is parsed
// by net/http's own parser (http.ReadResponse), so what is accepted does
// not change.
//
// What net/http's reader goroutine also did, h1 does when it takes a
// connection from its pool: a connection the server has closed meanwhile,
// or on which it sent bytes nobody asked for, is dropped there (see
// alive), so a POST is not written to a dead connection; where alive
// cannot look (not a Unix system), h1 takes no request at all. A request
// none of which went out (the server closed the connection just after the
// look) goes out again on another; one partly written is not retried, as
// net/http does not retry a POST.
//
// Bodies are capped at h1MaxBody because the caller does not read while it
// writes: a server that answers early (413) without reading a large body
// would stall the write, where net/http's reader would have seen the
// answer.
type h1 struct {
	next http.RoundTripper // the rest
	dial DialFunc          // the guard: every connection is checked

	mu     sync.Mutex
	idle   []*h1conn     // most recently used last
	reaper *time.Timer   // armed while connections are idle
	every  time.Duration // how often reap looks; 0: h1ReapEvery (tests shorten it)
	closed bool
}

const (
	// h1MaxBody is the largest body h1 sends itself.
	h1MaxBody = 64 << 10
	// h1MaxIdle is how many idle connections h1 keeps (net/http's
	// MaxIdleConnsPerHost in Dial is the same).
	h1MaxIdle = 16
	// h1IdleTimeout drops a connection idle for longer when it is next
	// taken (as net/http's IdleConnTimeout in Dial does with a timer).
	h1IdleTimeout = 90 * time.Second
	// h1ReapEvery is how often idle connections are looked at, to close
	// those the server has closed (Node closes its side after 5 s): a
	// socket the server ended stays open here until it is looked at.
	h1ReapEvery = 10 * time.Second
	// maxHeaderBytes bounds a response's status line and headers.
	maxHeaderBytes = 1 << 20
	// max1xx bounds the informational responses before the final one.
	max1xx = 5
)

// userAgent is what net/http sends when the request has none.
const userAgent = "Go-http-client/1.1"

// h1conn is one keep-alive connection.
type h1conn struct {
	net.Conn
	addr string
	lr   io.LimitedReader // under br: bounds the header block
	br   *bufio.Reader
	used time.Time // when it went idle
}

// aLongTimeAgo is a deadline in the past: setting it interrupts a blocked
// read or write at once.
var aLongTimeAgo = time.Unix(1, 0)

func (t *h1) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.takes(req) {
		return t.next.RoundTrip(req)
	}
	resp, err := t.exchange(req)
	if req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body, even on errors
	}
	return resp, err
}

// takes reports whether req is one h1 sends itself: a plain-http POST of
// a known, small length, to a host name net/http would send as it is
// (ASCII, no IPv6 zone), that leaves the connection's handling to the
// transport (no Connection header), on a platform where alive can look
// at an idle connection. net/http takes the rest.
func (t *h1) takes(req *http.Request) bool {
	if !peekable || req.Method != http.MethodPost || req.URL.Scheme != "http" ||
		req.ContentLength < 0 || req.ContentLength > h1MaxBody ||
		len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 {
		return false
	}
	if req.ContentLength == 0 && req.Body != nil && req.Body != http.NoBody {
		return false // net/http sends such a body chunked, as of unknown length
	}
	if req.ContentLength > 0 && req.Body == nil {
		return false
	}
	if _, ok := req.Header["Connection"]; ok {
		return false
	}
	return plainHost(req.URL.Host) && (req.Host == "" || plainHost(req.Host))
}

// plainHost reports whether h is sent in the Host header as it is: ASCII
// (net/http turns other names into punycode) and no IPv6 zone (which
// net/http leaves out).
func plainHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 || h[i] == '%' {
			return false
		}
	}
	return true
}

// shutdown closes the idle connections, and every other one when its
// exchange ends; no new exchange starts.
func (t *h1) shutdown() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.closed = true
	if t.reaper != nil {
		t.reaper.Stop()
		t.reaper = nil
	}
	t.mu.Unlock()
	for _, pc := range idle {
		pc.Close()
	}
}

func (t *h1) exchange(req *http.Request) (*http.Response, error) {
	// The request is made once, before any connection is taken: an
	// invalid header or body costs none, and a request that found its
	// connection closed is sent again, the same bytes, on another.
	bp := reqBufs.Get().(*[]byte)
	defer reqBufs.Put(bp)
	b, err := encodeRequest((*bp)[:0], req)
	if cap(b) <= 2*h1MaxBody {
		*bp = b
	}
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	addr := canonicalAddr(req)
	for {
		pc, reused, err := t.get(ctx, addr)
		if err != nil {
			return nil, err
		}
		stop := func() bool { return true }
		if ctx.Done() != nil {
			stop = context.AfterFunc(ctx, func() { pc.SetDeadline(aLongTimeAgo) })
		}
		n, err := pc.Write(b)
		if err != nil {
			stop()
			pc.Close()
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if n == 0 && reused {
				// Nothing went out: the server had closed the
				// connection after alive looked. Another is safe.
				continue
			}
			return nil, err
		}
		resp, err := t.read(pc, req)
		if err != nil {
			stop()
			pc.Close()
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, err
		}
		resp.Body = &h1body{t: t, pc: pc, ctx: ctx, body: resp.Body, left: resp.ContentLength,
			reuse: !resp.Close && !req.Close, stop: stop}
		if resp.ContentLength == 0 {
			resp.Body.(*h1body).release(true) // nothing to wait for
		}
		return resp, nil
	}
}

// canonicalAddr is req's host:port, port 80 when the URL has none.
func canonicalAddr(req *http.Request) string {
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(req.URL.Hostname(), port)
}

// get takes an idle connection to addr that is still open, or dials one.
func (t *h1) get(ctx context.Context, addr string) (pc *h1conn, reused bool, err error) {
	now := time.Now()
	for {
		t.mu.Lock()
		pc = t.popIdle(addr)
		closed := t.closed
		t.mu.Unlock()
		if closed {
			return nil, false, net.ErrClosed
		}
		if pc == nil {
			break
		}
		if now.Sub(pc.used) < h1IdleTimeout && alive(pc.Conn) {
			return pc, true, nil
		}
		pc.Close()
	}
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err
	}
	pc = &h1conn{Conn: conn, addr: addr}
	pc.lr.R = conn
	pc.br = bufio.NewReaderSize(&pc.lr, 4<<10)
	return pc, false, nil
}

// popIdle takes the most recently used idle connection to addr; t.mu is
// held.
func (t *h1) popIdle(addr string) *h1conn {
	for i := len(t.idle) - 1; i >= 0; i-- {
		if pc := t.idle[i]; pc.addr == addr {
			t.idle = append(t.idle[:i], t.idle[i+1:]...)
			return pc
		}
	}
	return nil
}

// put gives pc back for the next exchange, or closes it.
func (t *h1) put(pc *h1conn) {
	if pc.br.Buffered() > 0 {
		pc.Close() // bytes nobody asked for: the stream is out of step
		return
	}
	pc.used = time.Now()
	t.mu.Lock()
	if t.closed || len(t.idle) >= h1MaxIdle {
		t.mu.Unlock()
		pc.Close()
		return
	}
	t.idle = append(t.idle, pc)
	if t.reaper == nil {
		every := t.every
		if every == 0 {
			every = h1ReapEvery
		}
		t.reaper = time.AfterFunc(every, func() { t.reap(every) })
	}
	t.mu.Unlock()
}

// reap closes the idle connections that the server closed, or that were
// idle too long, and looks again later while any are left. It looks with
// the pool locked (a peek that does not wait), so that no exchange finds
// the pool empty meanwhile and dials another.
func (t *h1) reap(every time.Duration) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	keep := t.idle[:0]
	for _, pc := range t.idle {
		if now.Sub(pc.used) < h1IdleTimeout && alive(pc.Conn) {
			keep = append(keep, pc)
		} else {
			pc.Close()
		}
	}
	clear(t.idle[len(keep):])
	t.idle = keep
	if len(t.idle) > 0 {
		t.reaper.Reset(every)
	} else {
		t.reaper = nil
	}
}

// headerError is a request header that cannot be sent; it names the
// field, never the value (which may be a credential).
type headerError struct{ field string }

func (e *headerError) Error() string {
	return fmt.Sprintf("invalid header field value for %q: line breaks and control characters cannot be sent", e.field)
}

// reqBufs holds the buffers requests are encoded in.
var reqBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// encodeRequest appends req in HTTP/1.1 wire form to b, as net/http would
// write it: the request line, Host, a User-Agent unless the request says
// otherwise, the headers (each value trimmed), Content-Length, the body.
func encodeRequest(b []byte, req *http.Request) ([]byte, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !validValue(host) {
		return b, &headerError{"Host"}
	}
	b = append(b, "POST "...)
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	if ua, ok := req.Header["User-Agent"]; !ok {
		b = append(b, "User-Agent: "+userAgent+"\r\n"...)
	} else if len(ua) > 0 && ua[0] != "" {
		// net/http sends the first value only.
		if !validValue(ua[0]) {
			return b, &headerError{"User-Agent"}
		}
		b = append(b, "User-Agent: "...)
		b = append(b, textproto.TrimString(ua[0])...)
		b = append(b, "\r\n"...)
	}
	for k, vs := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue // written here, or not at all
		}
		if !validHeaderName(k) {
			return b, &headerError{k}
		}
		for _, v := range vs {
			if !validValue(v) {
				return b, &headerError{k}
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, textproto.TrimString(v)...)
			b = append(b, "\r\n"...)
		}
	}
	if req.Close {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, req.ContentLength, 10)
	b = append(b, "\r\n\r\n"...)
	if n := int(req.ContentLength); n > 0 {
		at := len(b)
		b = append(b, make([]byte, n)...)
		if _, err := io.ReadFull(req.Body, b[at:]); err != nil {
			return b, fmt.Errorf("reading the request body: %w", err)
		}
		var more [1]byte
		if m, _ := req.Body.Read(more[:]); m > 0 {
			return b, fmt.Errorf("the request body is longer than its ContentLength (%d)", n)
		}
	}
	return b, nil
}

// read reads the final response to req, skipping informational ones.
func (t *h1) read(pc *h1conn, req *http.Request) (*http.Response, error) {
	pc.lr.N = maxHeaderBytes
	for range max1xx + 1 {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			if pc.lr.N == 0 {
				return nil, fmt.Errorf("the response headers are over %d bytes", maxHeaderBytes)
			}
			return nil, err
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errors.New("the server switched protocols (HTTP 101) in answer to a POST")
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue // 100 Continue, 103 Early Hints: the answer follows
		}
		pc.lr.N = math.MaxInt64
		return resp, nil
	}
	return nil, fmt.Errorf("more than %d informational (1xx) responses", max1xx)
}

// h1body is a response body read from an h1 connection. The connection
// goes back to the pool once the body has been read to its end, and is
// closed when the body is closed before that. After either, the body no
// longer touches the connection, which may be carrying another exchange.
type h1body struct {
	t     *h1
	ctx   context.Context
	body  io.ReadCloser
	reuse bool // the connection may carry another exchange
	stop  func() bool

	mu    sync.Mutex // Close may come from another goroutine than Read
	pc    *h1conn    // nil once given back or closed
	left  int64      // bytes of a known length still unread; -1: unknown
	ended bool       // read to its end (else closed early)
}

var errReadAfterClose = errors.New("http: read on closed response body")

func (b *h1body) Read(p []byte) (int, error) {
	b.mu.Lock()
	open, ended := b.pc != nil, b.ended
	b.mu.Unlock()
	if !open {
		if ended {
			return 0, io.EOF
		}
		return 0, errReadAfterClose
	}
	n, err := b.body.Read(p)
	b.mu.Lock()
	if b.left > 0 {
		b.left -= int64(n)
	}
	end := err == io.EOF || (err == nil && b.left == 0)
	b.mu.Unlock()
	switch {
	case end:
		b.release(true)
	case err != nil:
		b.release(false)
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		}
	}
	return n, err
}

// Close ends the exchange. A body read to its known length keeps its
// connection; any other closes it, which also ends a Read blocked in it
// (a stream's).
func (b *h1body) Close() error {
	b.mu.Lock()
	done := b.left == 0
	b.mu.Unlock()
	b.release(done)
	return nil
}

// release hands the connection back (ok: the body ended cleanly) or
// closes it. Only the first call counts.
func (b *h1body) release(ok bool) {
	b.mu.Lock()
	pc := b.pc
	b.pc = nil
	if pc != nil {
		b.ended = ok
	}
	b.mu.Unlock()
	if pc == nil {
		return
	}
	// stop is false when the context ended: its deadline may be on the
	// connection already.
	if ok && b.reuse && b.stop() {
		b.t.put(pc)
		return
	}
	b.stop()
	pc.Close()
}

// validValue reports whether v may be sent as a field value: no control
// characters but tab (a CR or LF would start another header).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
