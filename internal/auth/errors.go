package auth

import (
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// Kinds of failure. Every error this package returns (other than a
// cancelled context) matches exactly one of them with errors.Is, so a
// caller can branch on what went wrong without parsing text:
//
//	if errors.Is(err, auth.ErrResourceMismatch) { ... }
//
// The error itself is an *Error carrying the facts; internal/explain
// builds the report a person reads from it (what, where, likely causes, a
// fix).
var (
	// ErrConfig: the Config cannot work (bad URL, missing client id for a
	// grant that needs one, unreadable private key).
	ErrConfig = errors.New("invalid OAuth configuration")
	// ErrInsecureURL: an authorization endpoint, metadata URL or the server
	// itself is plain http on a host other than loopback.
	ErrInsecureURL = errors.New("OAuth endpoint is not HTTPS")
	// ErrDiscovery: no usable Protected Resource or Authorization Server
	// metadata and no configured endpoints to fall back on.
	ErrDiscovery = errors.New("OAuth discovery failed")
	// ErrResourceMismatch: the Protected Resource Metadata describes a
	// different resource than the server being connected to.
	ErrResourceMismatch = errors.New("protected resource metadata is for another resource")
	// ErrIssuerMismatch: an authorization server's metadata names another
	// issuer than the one it was fetched for (RFC 8414 section 3.3).
	ErrIssuerMismatch = errors.New("authorization server metadata issuer mismatch")
	// ErrIssuerChanged: the server's authorization server is not the one
	// the pre-registered client (or a stored credential) belongs to;
	// credentials are never presented to another authorization server
	// (SEP-2352).
	ErrIssuerChanged = errors.New("the server moved to another authorization server")
	// ErrDPoP: DPoP (RFC 9449) cannot be used as the server requires, or
	// the server keeps refusing the client's proofs.
	ErrDPoP = errors.New("DPoP proof-of-possession failed")
	// ErrNoPKCE: the authorization server's metadata does not list S256 in
	// code_challenge_methods_supported.
	ErrNoPKCE = errors.New("authorization server does not support PKCE S256")
	// ErrNoClientIdentity: no pre-registered client, no Client ID Metadata
	// Document support and no Dynamic Client Registration endpoint.
	ErrNoClientIdentity = errors.New("no way to identify the OAuth client")
	// ErrRegistration: Dynamic Client Registration was refused or failed.
	ErrRegistration = errors.New("client registration failed")
	// ErrStateMismatch: the authorization response's state does not match
	// the request's (a possible CSRF or mixed-up login).
	ErrStateMismatch = errors.New("authorization response state mismatch")
	// ErrIssMismatch: the authorization response's iss (RFC 9207) is not
	// the issuer the request was sent to, or it is missing although the
	// authorization server promised it: a possible mix-up attack. The
	// code is never redeemed and the response's error is not shown.
	ErrIssMismatch = errors.New("authorization response from an unexpected issuer")
	// ErrAuthorizationDenied: the authorization server redirected back
	// with an error (the user declined, or the request was invalid).
	ErrAuthorizationDenied = errors.New("authorization was denied")
	// ErrRedirectTimeout: nobody completed the login in the browser in time.
	ErrRedirectTimeout = errors.New("timed out waiting for the authorization redirect")
	// ErrTokenEndpoint: the token endpoint refused or failed a request.
	ErrTokenEndpoint = errors.New("token request failed")
	// ErrUnauthorized: the server kept answering 401 after fresh tokens
	// were obtained; the attempts were bounded and have run out.
	ErrUnauthorized = errors.New("server keeps rejecting new tokens")
	// ErrInsufficientScope: the server kept answering 403
	// insufficient_scope after step-up authorization.
	ErrInsufficientScope = errors.New("step-up authorization did not satisfy the server")
)

// Error is every failure of this package, with the facts internal/explain
// reports it from.
type Error struct {
	Kind   error  // one of the Err* values above
	Server string // the server's name in the config
	URL    string // the URL that failed (an endpoint, metadata document, the server)
	Op     string // what was being done: "fetch protected resource metadata", "token request", ...

	Status      int    // HTTP status, when a response was received
	OAuthError  string // the OAuth "error" code, when the peer sent one
	Description string // its error_description, sanitized
	Body        string // start of the response body, sanitized, at most 512 bytes

	Err error // underlying error, if any

	// Diag is where the server is configured (its config file and layer,
	// its URL): Config.Diag, for the report.
	Diag diag.Context
}

// Detail is the underlying error's text as a report shows it, with the
// queries of URLs in it removed (they can carry codes, state or tokens).
func (e *Error) Detail() string {
	if e.Err == nil {
		return ""
	}
	return scrubURLs(e.Err.Error())
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("oauth")
	if e.Server != "" {
		b.WriteString(" (server " + strconv.Quote(e.Server) + ")")
	}
	b.WriteString(": ")
	if e.Op != "" {
		b.WriteString(e.Op + ": ")
	}
	b.WriteString(e.Kind.Error())
	if e.URL != "" {
		b.WriteString(" at " + e.URL)
	}
	if e.Status != 0 {
		b.WriteString(": HTTP " + strconv.Itoa(e.Status))
	}
	if e.OAuthError != "" {
		b.WriteString(": " + e.OAuthError)
		if e.Description != "" {
			b.WriteString(" (" + e.Description + ")")
		}
	}
	if e.Err != nil {
		b.WriteString(": " + scrubURLs(e.Err.Error()))
	}
	return sanitize.ForDisplay(b.String())
}

// Unwrap exposes both the kind and the underlying error to errors.Is/As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// maxBodyExcerpt bounds the response body quoted in an error.
const maxBodyExcerpt = 512

// excerpt is the start of a response body fit to show a person: at most
// maxBodyExcerpt bytes, cut on a rune boundary, control and escape
// sequences removed, and anything that looks like a credential masked.
func excerpt(body []byte) string {
	s := string(body)
	cut := false
	if len(s) > maxBodyExcerpt {
		s = s[:maxBodyExcerpt]
		for len(s) > 0 && !utf8.ValidString(s[len(s)-1:]) && !utf8.RuneStart(s[len(s)-1]) {
			s = s[:len(s)-1]
		}
		if len(s) > 0 && !utf8.ValidString(s[len(s)-1:]) {
			s = s[:len(s)-1]
		}
		cut = true
	}
	s = maskSecrets(s)
	s = strings.TrimSpace(sanitize.ForDisplay(s))
	if cut {
		s += " …"
	}
	return s
}

// secretKeys are JSON members and form fields whose values are never shown.
var secretKeys = []string{"access_token", "refresh_token", "id_token", "client_secret", "assertion", "client_assertion", "code", "code_verifier", "subject_token"}

// maskSecrets replaces the values of secretKeys in JSON or form text with
// "***". It is a safety net for error pages that echo a request.
func maskSecrets(s string) string {
	for _, k := range secretKeys {
		for _, pat := range []string{`"` + k + `"`, k + "="} {
			from := 0
			for {
				i := strings.Index(s[from:], pat)
				if i < 0 {
					break
				}
				i += from + len(pat)
				j := i
				if pat[0] == '"' {
					// skip `: "` to the value
					for j < len(s) && (s[j] == ' ' || s[j] == ':') {
						j++
					}
					if j < len(s) && s[j] == '"' {
						j++
						end := j
						for end < len(s) && s[end] != '"' {
							if s[end] == '\\' {
								end++
							}
							end++
						}
						if end > len(s) {
							end = len(s)
						}
						s = s[:j] + "***" + s[end:]
						from = j + 3
						continue
					}
					from = j
					continue
				}
				end := j
				for end < len(s) && s[end] != '&' && s[end] != ' ' && s[end] != '\n' && s[end] != '"' {
					end++
				}
				s = s[:j] + "***" + s[end:]
				from = j + 3
			}
		}
	}
	return s
}

// urlQuery matches the query (and fragment) of URLs quoted in error text
// (net/http puts the full URL in a *url.Error).
var urlQuery = regexp.MustCompile(`(https?://[^\s"'?#]+)[?#][^\s"']*`)

// scrubURLs removes the queries of URLs in s: they can carry codes, state
// or tokens.
func scrubURLs(s string) string { return urlQuery.ReplaceAllString(s, "$1?…") }

// redactURL drops the query and fragment of u (they can carry codes,
// state or tokens) for messages and logs.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		if i := strings.IndexAny(u, "?#"); i >= 0 {
			return u[:i]
		}
		return u
	}
	if p.RawQuery != "" {
		p.RawQuery = ""
		p.ForceQuery = false
		p.Fragment = ""
		return p.String() + "?…"
	}
	p.Fragment = ""
	return p.String()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// fail builds the returned error for kind on c's server.
func (c *Client) fail(kind error, op, rawURL string, cause error) *Error {
	return c.failWith(&Error{Kind: kind, Op: op, URL: rawURL, Err: cause})
}

func (c *Client) failWith(e *Error) *Error {
	e.Server = c.cfg.ServerName
	if e.URL != "" {
		e.URL = redactURL(e.URL)
	}
	e.Diag = c.diagContext()
	return e
}

func (c *Client) diagContext() diag.Context {
	dc := c.cfg.Diag
	if dc.Server == "" {
		dc.Server = c.cfg.ServerName
	}
	if dc.URL == "" {
		dc.URL = c.cfg.ServerURL
	}
	return dc
}

// configError is returned by New, before a Client exists.
func configError(cfg *Config, what string, cause error) error {
	e := &Error{Kind: ErrConfig, Server: cfg.ServerName, Op: what, Err: cause, Diag: cfg.Diag}
	if e.Diag.URL == "" {
		e.Diag.URL = cfg.ServerURL
	}
	return e
}
