package httptransport

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/bounded"
)

// Defaults and caps.
const (
	DefaultMaxRetries   = 3
	DefaultRetryBackoff = time.Second
	DefaultTimeout      = 30 * time.Second

	// MaxRetryDelay caps one wait between attempts, including a server's
	// Retry-After and SSE retry values: a server cannot park the host.
	MaxRetryDelay = 30 * time.Second
)

// Config describes one HTTP server.
type Config struct {
	Server string // the server's name, for errors and log lines
	URL    string // the MCP endpoint (http or https)

	// Options are what a config sets (OptionTable decodes them).
	Options

	// LegacySSE speaks the 2024-11-05 HTTP+SSE transport from the start
	// (config `type = "sse"`). Without it, the transport still falls back
	// to it when the first POST (initialize) gets 400, 404 or 405.
	LegacySSE bool

	// Reinitialize makes the transport handle one expired session (HTTP 404
	// on a request carrying the session id) by itself: it replays the
	// initialize request and initialized notification it forwarded, swallows
	// the second initialize response, and resends the failed request.
	// Server-side session state (subscriptions, log level) is lost, so it is
	// off by default and the Conn fails with *SessionExpiredError instead.
	Reinitialize bool

	// CABundle is a PEM file of extra root certificates, added to the
	// system roots. TLS verification is always on.
	CABundle string

	Logger hclog.Logger // nil discards

	// Timeout bounds connecting, the TLS handshake and waiting for the
	// response headers of everything except requests after initialize
	// (those may legitimately take long; the session's request timeout and
	// cancellation bound them), and the wait for a legacy endpoint event
	// (default 30 s).
	Timeout time.Duration

	// MaxMessageSize bounds a JSON body and one SSE event (default
	// mcp.MaxFrameSize, 10 MiB).
	MaxMessageSize int

	// Resolver looks up host names (default net.DefaultResolver) and
	// DialContext connects to a checked IP:port (default a net.Dialer).
	// Tests replace both so that nothing leaves loopback.
	Resolver    Resolver
	DialContext DialFunc

	// WrapTransport, if set, wraps the HTTP round tripper (after the
	// guards), for example to add tracing.
	WrapTransport func(http.RoundTripper) http.RoundTripper

	// Authorizer, if set, authorizes every request (POST, GET, DELETE) and
	// handles 401 and 403 answers; internal/auth's *Client is one.
	Authorizer Authorizer

	retries int // MaxRetries resolved by normalize
}

// Authorizer adds credentials to requests and reacts to the server's
// challenges, so the transport needs to know nothing of OAuth. For every
// request the transport calls Authorize, sends it, and on 401 or 403 calls
// Challenge: when it says retry, the request is sent again (re-authorized;
// bodies are kept for that), otherwise the status is reported as an
// *HTTPStatusError, and an error from Challenge ends the session as an
// *AuthError. Challenge bounds the retries itself; the transport adds a
// generous cap of its own (maxAuthRetries) against a broken Authorizer.
type Authorizer interface {
	// Authorize sets the Authorization header (if it has a token) on req.
	Authorize(ctx context.Context, req *http.Request) error
	// Challenge handles a 401 or 403 response and reports whether the
	// request should be retried. It must not read the body.
	Challenge(ctx context.Context, resp *http.Response) (retry bool, err error)
}

// ResponseObserver is an Authorizer that also sees each successful
// response, before its body is read: a DPoP server may hand out its next
// nonce on one (RFC 9449 section 8.2), and a client that waits for the
// 401 pays a round trip for every rotation.
type ResponseObserver interface {
	Observe(resp *http.Response)
}

// ConfigError reports a Config that cannot work; nothing was sent.
type ConfigError struct {
	Server  string
	Problem string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("server %q: %s", e.Server, e.Problem)
}

// normalize fills defaults and checks what can be checked without I/O.
func (cfg *Config) normalize() (*url.URL, error) {
	bad := func(format string, args ...any) (*url.URL, error) {
		return nil, &ConfigError{Server: cfg.Server, Problem: fmt.Sprintf(format, args...)}
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	cfg.retries = DefaultMaxRetries
	if cfg.MaxRetries != nil {
		cfg.retries = max(*cfg.MaxRetries, 0)
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = DefaultRetryBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = mcp.MaxFrameSize
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.DialContext == nil {
		d := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
		cfg.DialContext = d.DialContext
	}
	if cfg.URL == "" {
		return bad("no url configured")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		// url.Error repeats the URL, which may hold a token.
		return bad("the url is not valid (%v)", errorsCause(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("the url %s must start with http:// or https://", redactURL(u))
	}
	if u.Host == "" {
		return bad("the url %s has no host", redactURL(u))
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = "", ""
	}
	if p := checkHeaders(cfg.Headers); p != "" {
		return bad("%s", p)
	}
	return u, nil
}

// checkHeaders is what is wrong with headers, or "": the config loader
// asks at load (OptionTable), Dial again for headers given in code.
func checkHeaders(h map[string]string) string {
	for _, name := range slices.Sorted(maps.Keys(h)) {
		if !validHeaderName(name) {
			return fmt.Sprintf("header name %q is not a valid HTTP header name", name)
		}
		if strings.ContainsAny(h[name], "\r\n\x00") {
			return fmt.Sprintf("the value of header %q contains a line break or NUL; check its ${VAR} expansion", name)
		}
	}
	return ""
}

func errorsCause(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// headerNames lists configured header names for logs; values stay secret.
func headerNames(h map[string]string) string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, http.CanonicalHeaderKey(k))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// maxCABundle bounds a CA bundle file; the system's own is about 200 KB.
const maxCABundle = 10 << 20

// tlsConfig builds the client TLS settings: system roots plus the bundle.
func (cfg *Config) tlsConfig() (*tls.Config, error) {
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CABundle == "" {
		return t, nil
	}
	pem, err := bounded.ReadFile(cfg.CABundle, maxCABundle)
	if err != nil {
		return nil, &ConfigError{Server: cfg.Server, Problem: fmt.Sprintf("cannot read the CA bundle: %v", err)}
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, &ConfigError{Server: cfg.Server, Problem: fmt.Sprintf("the CA bundle %s holds no PEM certificates", cfg.CABundle)}
	}
	t.RootCAs = pool
	return t, nil
}
