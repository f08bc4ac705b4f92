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
// The error itself is a *diag.Report (what, where, likely causes, a fix)
// whose cause is an *Error carrying the details.
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

// Error is the detail behind every failure of this package. It is the
// Cause of the *diag.Report that is returned; reach it with errors.As.
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

// report wraps e in the *diag.Report a person reads: title, the problem in
// one sentence, evidence, likely causes and a fix, by kind.
func (e *Error) report(dc diag.Context) *diag.Report {
	r := &diag.Report{
		Title:  "OAuth Authorization Failed",
		Server: e.Server,
		Source: dc.Source,
		URL:    dc.URL,
		Cause:  e,
	}
	where := ""
	if e.URL != "" {
		where = " (" + e.URL + ")"
	}
	status := ""
	if e.Status != 0 {
		status = "HTTP " + strconv.Itoa(e.Status)
	}
	oauthErr := ""
	if e.OAuthError != "" {
		oauthErr = e.OAuthError
		if e.Description != "" {
			oauthErr += ": " + e.Description
		}
	}
	login := "nexus auth login " + orDefault(e.Server, "SERVER")
	inFile := ""
	if dc.Source.File != "" {
		inFile = " in " + dc.Source.File
	}
	switch e.Kind {
	case ErrConfig:
		r.Title = "OAuth Configuration Error"
		r.Problem = e.Op
		if e.Err != nil {
			r.Problem += ": " + e.Err.Error()
		}
		r.Fix = []string{"Check this server's \"oauth\" settings" + inFile}
		if errors.Is(e.Err, errUserInfo) {
			r.Fix = []string{"Remove the user name and password from this server's url" + inFile + ": with an oauth block the token authenticates",
				"Or, for a server that takes basic authentication, remove the oauth block and keep them in the url (never printed)"}
		}
	case ErrInsecureURL:
		r.Problem = "Refusing to use " + e.URL + " for " + e.Op + ": OAuth endpoints must use HTTPS (plain http is only allowed on localhost)"
		r.Causes = []string{
			"The server or its authorization server is misconfigured",
			"The metadata was tampered with to send credentials over an unencrypted connection",
		}
		r.Fix = []string{"Use the https:// URL of the server, or ask its operator to serve the authorization endpoints over HTTPS"}
	case ErrDiscovery:
		r.Problem = "Could not " + e.Op + where
		r.Causes = []string{
			"The server does not support OAuth (it may expect a static token in a header instead)",
			"The server's metadata endpoints are missing or broken",
		}
		r.Fix = []string{
			"Check that the server URL is right: " + orDefault(dc.URL, "its \"url\""+inFile),
			"Configure the endpoints by hand in this server's \"oauth\" block (auth_url, token_url, client_id)" + inFile,
		}
	case ErrResourceMismatch:
		r.Problem = "The Protected Resource Metadata" + where + " is for another resource: " + e.Description
		r.Causes = []string{
			"The server publishes the metadata of a different server (a misconfigured proxy or tenant)",
			"A malicious server tries to obtain tokens meant for another service",
		}
		r.Fix = []string{
			"Check that the configured URL is the server's exact MCP endpoint",
			"Do not log in until the server's operator fixes the \"resource\" in its metadata",
		}
	case ErrIssuerMismatch:
		r.Problem = "The authorization server metadata" + where + " names a different issuer: " + e.Description
		r.Causes = []string{
			"The authorization server is misconfigured (its issuer setting does not match its URL)",
			"The server's Protected Resource Metadata names the issuer in another form (the two must be identical: a trailing slash or a different case counts)",
			"The metadata was served by a party impersonating the authorization server",
		}
		r.Fix = []string{"Ask the server's operator to make authorization_servers in its Protected Resource Metadata and the issuer in the authorization server's metadata identical"}
	case ErrIssuerChanged:
		r.Problem = "The client credentials of this server belong to another authorization server: " + e.Description + "; they were not sent"
		r.Causes = []string{
			"The server's Protected Resource Metadata now names a different authorization server (a migration)",
			"The metadata was tampered with to collect credentials meant for another authorization server",
		}
		r.Fix = []string{
			"If the move is intended, register Nexus at the new authorization server and put its client_id (and client_secret) in this server's \"oauth\" block" + inFile + ", with issuer set to the new issuer, then: " + login,
			"Otherwise ask the server's operator why its authorization server changed",
		}
	case ErrDPoP:
		r.Problem = "DPoP (proof-of-possession tokens, RFC 9449) failed" + where + ": " + orDefault(e.Description, e.Op)
		r.Causes = []string{
			"The server accepts only DPoP-bound tokens and the configuration or the authorization server rules them out",
			"The server rejects the client's proofs (a clock far off, or a nonce it keeps changing)",
		}
		r.Fix = []string{
			"Set dpop = \"auto\" (the default) or \"on\" in this server's oauth block" + inFile,
			"Check the system clock, then ask the server's operator which DPoP algorithms and nonces it expects",
		}
	case ErrNoPKCE:
		r.Problem = "The authorization server" + where + " does not support PKCE with S256 (code_challenge_methods_supported: " + orDefault(e.Description, "absent") + ")"
		r.Causes = []string{"The authorization server is too old or misconfigured for MCP, which requires PKCE S256"}
		r.Fix = []string{
			"Ask the server's operator to enable PKCE (S256) and advertise it in the metadata",
			"For machine-to-machine access, a client-credentials grant does not need PKCE",
		}
	case ErrNoClientIdentity:
		r.Problem = "The authorization server" + where + " offers no way for Nexus to identify itself: no pre-registered client_id is configured, it does not accept Client ID Metadata Documents, and it has no registration endpoint"
		r.Causes = []string{"The server expects clients to be registered by hand"}
		r.Fix = []string{
			"Register an OAuth client with the server's provider and add it to this server's entry" + inFile + ":\n\"oauth\": {\"client_id\": \"...\", \"client_secret\": \"${env:CLIENT_SECRET}\"}",
		}
	case ErrRegistration:
		r.Problem = "Dynamic Client Registration at " + orDefault(e.URL, "the registration endpoint") + " failed"
		if status != "" {
			r.Problem += ": " + status
		}
		if oauthErr != "" {
			r.Problem += " (" + oauthErr + ")"
		}
		r.Causes = []string{
			"The authorization server restricts registration (an allowlist, an initial access token, or it is disabled)",
			"It rejected the redirect URI or another piece of client metadata (Nexus registers application_type \"native\" with a loopback redirect URI, which OpenID Connect servers must accept for native clients)",
		}
		r.Fix = []string{"Register a client by hand and configure its client_id (and client_secret)" + inFile}
	case ErrStateMismatch:
		r.Problem = "The authorization response did not match the request (" + orDefault(e.Description, "state mismatch") + "); it was discarded"
		r.Causes = []string{
			"A stale browser tab from an earlier login completed instead of the current one",
			"Another program sent a forged response to the redirect listener (a CSRF attempt)",
		}
		r.Fix = []string{"Close old login tabs and log in again: " + login}
	case ErrIssMismatch:
		r.Problem = "The authorization response did not come from the authorization server the login was started at (" + e.Description + "); it was discarded and its code not redeemed"
		r.Causes = []string{
			"Several authorization servers are in use and a response from another one reached this login (a mix-up attack, RFC 9207)",
			"The authorization server's issuer setting differs from the issuer in its metadata (even a trailing slash counts)",
		}
		r.Fix = []string{
			"Close old login tabs and log in again: " + login,
			"If it persists, ask the server's operator to make the iss it sends identical to the issuer in its metadata",
		}
	case ErrAuthorizationDenied:
		r.Problem = "The authorization server refused the authorization request"
		if oauthErr != "" {
			r.Problem += ": " + oauthErr
		}
		r.Causes = []string{
			"The login was cancelled or consent was denied in the browser",
			"The request was invalid for this authorization server (scope, redirect URI or client)",
		}
		r.Fix = []string{"Log in again and approve the request: " + login}
	case ErrRedirectTimeout:
		r.Problem = "Nobody completed the login in the browser in time; the redirect listener at " + orDefault(e.URL, "localhost") + " gave up"
		r.Causes = []string{
			"The browser did not open (no display, or no browser installed)",
			"The login page was left unfinished",
		}
		r.Fix = []string{
			"Run " + login + " and open the printed URL by hand",
			"On a machine without a browser, use a client-credentials grant or a pre-obtained token",
		}
	case ErrTokenEndpoint:
		r.Problem = "The token endpoint " + orDefault(e.URL, "") + " failed the " + orDefault(e.Op, "token request")
		if status != "" {
			r.Problem += ": " + status
		}
		if oauthErr != "" {
			r.Problem += " (" + oauthErr + ")"
		}
		switch {
		case e.Op == opWorkloadGrant && e.Status < 500 && e.OAuthError != "":
			r.Causes = []string{
				"The workload JWT expired, or its aud is not this authorization server's issuer (invalid_grant)",
				"The authorization server does not trust the JWT's issuer or subject for this client, or not for the scopes asked (unauthorized_client, invalid_scope)",
			}
			r.Fix = []string{
				"Check the JWT in assertion or assertion_file" + inFile + ": its aud, exp, iss and sub",
				"Ask the authorization server's operator to trust this workload (its issuer and subject) for the scopes it needs",
			}
		case e.Status >= 500:
			r.Causes = []string{"The authorization server failed while handling the request (a bug or an outage)"}
			r.Fix = []string{"Try again later; if it persists, contact the server's operator"}
		case e.OAuthError == "invalid_client" || e.Status == 401:
			r.Causes = []string{
				"The client_id or client_secret (or signing key) is wrong or was revoked",
				"The client authentication method does not match the registration",
			}
			r.Fix = []string{"Check client_id and client_secret" + inFile + ", then: " + login}
		case e.OAuthError == "invalid_grant":
			r.Causes = []string{"The authorization code, refresh token or assertion expired, was used already, or was revoked"}
			r.Fix = []string{"Log in again: " + login}
		case e.Status == 0 && e.Err != nil:
			r.Causes = []string{"The authorization server could not be reached or sent a response that is not a token"}
			r.Fix = []string{"Check the network and the token endpoint URL"}
		default:
			r.Causes = []string{"The authorization server rejected the request"}
			r.Fix = []string{"The response body above usually says why"}
		}
	case ErrUnauthorized:
		r.Problem = "The server kept answering 401 Unauthorized after " + e.Description + "; giving up"
		r.Causes = []string{
			"The server does not accept tokens from this authorization server (a wrong audience or resource)",
			"The server's token validation is broken",
		}
		r.Fix = []string{
			"Log out and in again: nexus auth logout " + orDefault(e.Server, "SERVER") + " && " + login,
			"Ask the server's operator to check which tokens it accepts",
		}
	case ErrInsufficientScope:
		r.Problem = "The server kept answering 403 insufficient_scope after step-up authorization (" + e.Description + "); giving up"
		r.Causes = []string{
			"The account is not allowed the scopes the server asks for",
			"The authorization server grants fewer scopes than requested",
		}
		r.Fix = []string{"Check the account's permissions with the server's provider"}
	default:
		r.Problem = e.Error()
	}
	if e.Body != "" {
		r.Details = append(r.Details, diag.Section{Heading: "Response body (start)", Lines: strings.Split(e.Body, "\n")})
	}
	if e.Err != nil && e.Kind != ErrConfig {
		r.Details = append(r.Details, diag.Section{Heading: "Error", Lines: []string{scrubURLs(e.Err.Error())}})
	}
	return r
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// fail builds the returned error for kind on c's server.
func (c *Client) fail(kind error, op, rawURL string, cause error) *diag.Report {
	return c.failWith(&Error{Kind: kind, Op: op, URL: rawURL, Err: cause})
}

func (c *Client) failWith(e *Error) *diag.Report {
	e.Server = c.cfg.ServerName
	if e.URL != "" {
		e.URL = redactURL(e.URL)
	}
	return e.report(c.diagContext())
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
	e := &Error{Kind: ErrConfig, Server: cfg.ServerName, Op: what, Err: cause}
	dc := cfg.Diag
	if dc.URL == "" {
		dc.URL = cfg.ServerURL
	}
	return e.report(dc)
}
