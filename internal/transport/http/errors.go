package httptransport

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/bounded"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// Every error here names the server and the URL (with credentials and
// secret-looking query values masked) in one sentence, so a log line or a
// CLI message says which of many configured servers failed and where.

// HTTPStatusError reports an HTTP error status (after any retries).
type HTTPStatusError struct {
	Server      string
	Method      string // HTTP method: POST, GET, DELETE
	URL         string // redacted
	Status      int
	BodyExcerpt string      // at most 512 bytes of the body, sanitized for display
	Header      http.Header // the response headers (WWW-Authenticate, Retry-After, ...)
	// Fallback is why the legacy HTTP+SSE fallback failed, when a 4xx to
	// the first POST made the transport try it.
	Fallback error
}

func (e *HTTPStatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "server %q: %s %s returned HTTP %d %s", e.Server, e.Method, e.URL, e.Status, http.StatusText(e.Status))
	switch e.Status {
	case http.StatusUnauthorized:
		b.WriteString(" (the server wants credentials: configure an Authorization header or log in)")
	case http.StatusForbidden:
		b.WriteString(" (the credentials lack access, or the server refused the request's Origin)")
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		b.WriteString(" (check that the URL is the server's MCP endpoint)")
	}
	if e.BodyExcerpt != "" {
		b.WriteString(": ")
		b.WriteString(e.BodyExcerpt)
	}
	if e.Fallback != nil {
		b.WriteString("; the legacy HTTP+SSE fallback failed too: ")
		b.WriteString(e.Fallback.Error())
	}
	return b.String()
}

// AuthError reports a 401 or 403 that the Authorizer could not resolve:
// discovery, registration, the login or a token request failed, or the
// server kept refusing fresh tokens. It ends the session. Err is the
// Authorizer's error (internal/auth returns reports that say what to do), and
// its text is this error's text.
type AuthError struct {
	Server string
	Method string
	URL    string
	Status int
	Err    error
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("server %q: %s %s returned HTTP %d and authorization failed: %v", e.Server, e.Method, e.URL, e.Status, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// authorizeError is an Authorizer's failure to prepare a request.
type authorizeError struct{ err error }

func (e *authorizeError) Error() string { return "authorizing the request: " + e.err.Error() }
func (e *authorizeError) Unwrap() error { return e.err }

// BlockedAddressError reports a connection the SSRF guard refused: the
// host resolved only to addresses Nexus does not connect to.
type BlockedAddressError struct {
	Server string
	URL    string
	Host   string
	IP     netip.Addr
	Reason string // "a private network address", ...
	// Always is set for addresses refused even with AllowPrivateNetworks
	// (cloud metadata services).
	Always bool
}

func (e *BlockedAddressError) Error() string {
	target := e.Host
	if e.IP.String() != e.Host {
		target = e.Host + " (" + e.IP.String() + ")"
	}
	fix := "; set allow_private_networks = true for this server if it really is on your network"
	if e.Always {
		fix = "; this is never allowed, because it would expose cloud credentials"
	}
	return fmt.Sprintf("server %q: refusing to connect to %s for %s: it is %s%s", e.Server, target, e.URL, e.Reason, fix)
}

// RedirectError reports a redirect. Redirects are never followed: a
// redirect is how a server would send the host (and its headers) to an
// address the SSRF guard exists to protect.
type RedirectError struct {
	Server   string
	Method   string
	URL      string
	Status   int
	Location string // redacted and cut to a readable length
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("server %q: %s %s answered with a redirect (HTTP %d) to %s; redirects are never followed, so configure the final URL instead",
		e.Server, e.Method, e.URL, e.Status, e.Location)
}

// SessionExpiredError reports HTTP 404 for a request that carried the
// session id: the server ended the session. The spec's remedy is a new
// initialize without a session id: reconnect (mcp.Connect over a new Conn),
// or set Config.Reinitialize to let the transport do it once by itself.
type SessionExpiredError struct {
	Server string
	URL    string
	// Reinit is why a transparent re-initialize failed, if one was tried.
	Reinit error
}

func (e *SessionExpiredError) Error() string {
	s := fmt.Sprintf("server %q: the session at %s has expired (HTTP 404 for its Mcp-Session-Id); reconnect to start a new session", e.Server, e.URL)
	if e.Reinit != nil {
		s += "; re-initializing failed: " + e.Reinit.Error()
	}
	return s
}

// InvalidSessionIDError reports an Mcp-Session-Id the spec does not allow
// (only visible ASCII, and Nexus accepts at most 256 bytes). The value is
// not repeated: a session id is a credential.
type InvalidSessionIDError struct {
	Server string
	URL    string
	Reason string
}

func (e *InvalidSessionIDError) Error() string {
	return fmt.Sprintf("server %q: %s sent an invalid Mcp-Session-Id: %s", e.Server, e.URL, e.Reason)
}

// UnexpectedResponseError reports a success status whose body is neither
// a JSON-RPC message nor an event stream: typically an HTML page from a
// proxy, a login wall or a URL that is not an MCP endpoint.
type UnexpectedResponseError struct {
	Server      string
	Method      string
	URL         string
	ContentType string
	BodyExcerpt string
}

func (e *UnexpectedResponseError) Error() string {
	ct := e.ContentType
	if ct == "" {
		ct = "no Content-Type"
	} else {
		ct = "Content-Type " + strconv.Quote(ct)
	}
	s := fmt.Sprintf("server %q: %s %s answered with %s instead of a JSON-RPC message or an SSE stream; check that the URL is the server's MCP endpoint", e.Server, e.Method, e.URL, ct)
	if e.BodyExcerpt != "" {
		s += "; the body starts: " + e.BodyExcerpt
	}
	return s
}

// BodyTooLargeError reports a JSON body or one SSE event over the size
// limit. Nothing past the limit was read. It unwraps to
// *mcp.FrameTooLargeError, which the diagnostics layer explains.
type BodyTooLargeError struct {
	Server string
	URL    string
	Limit  int
}

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("server %q: a message from %s exceeds the %s limit; the session was closed", e.Server, e.URL, bounded.Size(int64(e.Limit)))
}

func (e *BodyTooLargeError) Unwrap() error { return &mcp.FrameTooLargeError{Limit: e.Limit} }

// RequestError reports an exchange that failed without an HTTP status:
// the connection could not be made or broke, TLS failed, the server did not
// answer in time, or a stream ended early.
type RequestError struct {
	Server string
	Method string
	URL    string
	Err    error
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("server %q: %s %s failed: %v", e.Server, e.Method, e.URL, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// Timeout reports whether the failure was a timeout.
func (e *RequestError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// ProtocolError reports a server that broke the transport's rules, such
// as a legacy SSE server announcing an endpoint on another origin.
type ProtocolError struct {
	Server  string
	URL     string
	Problem string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("server %q: %s: %s", e.Server, e.URL, e.Problem)
}

// timeoutError is what an exchange fails with when its deadline passes.
type timeoutError struct {
	what  string
	after time.Duration
}

func (e *timeoutError) Error() string { return fmt.Sprintf("no %s within %s", e.what, e.after) }
func (e *timeoutError) Timeout() bool { return true }

// streamEndedError says a stream ended without the response it owed.
type streamEndedError struct {
	id     string
	err    error
	modern bool // a modern request: streams are not resumable in its revision
}

func (e *streamEndedError) Error() string {
	why := "the server closed it"
	if e.err != nil && !errors.Is(e.err, io.EOF) {
		why = e.err.Error()
	}
	if e.modern {
		return fmt.Sprintf("the SSE stream for request %s ended before its response (2026-07-28 streams cannot be resumed; the request is lost): %s", e.id, why)
	}
	return fmt.Sprintf("the SSE stream for request %s ended before its response, and it cannot be resumed (the server sent no event id): %s", e.id, why)
}

func (e *streamEndedError) Unwrap() error { return e.err }

// redactURL masks the password of the userinfo and the values of query
// parameters that look like credentials.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	return diag.MaskURLs(u.String())
}

// maxExcerpt bounds the body text kept in an error.
const maxExcerpt = 512

// excerpt reads at most maxExcerpt bytes of r and makes them safe to show:
// control characters and invalid UTF-8 become spaces, runs of space
// collapse, and a cut is marked.
func excerpt(r io.Reader) string {
	if r == nil {
		return ""
	}
	buf := make([]byte, maxExcerpt+1)
	n, _ := io.ReadFull(r, buf)
	return sanitizeExcerpt(buf[:n])
}

func sanitizeExcerpt(b []byte) string {
	cut := len(b) > maxExcerpt
	if cut {
		b = b[:maxExcerpt]
	}
	var out strings.Builder
	space := false
	for len(b) > 0 {
		if cut && !utf8.FullRune(b) {
			break // a rune split by the cut
		}
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
			space = out.Len() > 0
			continue
		}
		if space {
			out.WriteByte(' ')
			space = false
		}
		out.WriteRune(r)
	}
	s := out.String()
	if cut {
		s += " …"
	}
	return s
}

// cutText shortens server-controlled text (a Location header) for an error.
func cutText(s string, n int) string {
	s = sanitizeExcerpt([]byte(s))
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + " …"
	}
	return s
}
