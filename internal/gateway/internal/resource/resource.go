package resource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Limits on what comes from outside.
const (
	// MaxTokenBytes caps an access token before it is parsed.
	MaxTokenBytes = 8 << 10
	// MaxDocumentBytes caps every fetched document (metadata, key set).
	MaxDocumentBytes = 1 << 20
)

// Cache timings; see the package documentation.
const (
	defaultTTL   = 10 * time.Minute
	minTTL       = time.Minute
	maxTTL       = 24 * time.Hour
	refetchGap   = 30 * time.Second // between fetches for unknown key ids
	failureGap   = 5 * time.Second  // after a failed fetch
	defaultSkew  = 60 * time.Second
	defaultClaim = "sub"
)

// fetchTimeout bounds each HTTP fetch (a variable so tests can shorten it).
var fetchTimeout = 10 * time.Second

// algorithms are the signature algorithms accepted. "none" and the HMAC
// family are absent on purpose: with HMAC, a forger would sign with the
// issuer's public key as the shared secret.
var algorithms = []string{
	"RS256", "RS384", "RS512",
	"PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512",
	"EdDSA",
}

// Config says which tokens the gateway accepts and who they act as.
type Config struct {
	// Resource is the gateway's resource identifier: the URL of its MCP
	// endpoint as clients reach it. It is the "resource" of the Protected
	// Resource Metadata and, unless Audience says otherwise, the audience
	// tokens must carry (RFC 8707). https, or http on a loopback host.
	Resource string
	// Issuer is the authorization server's issuer identifier, compared
	// exactly with the tokens' iss claim. https, or http on a loopback
	// host.
	Issuer string
	// JWKSURL is where the issuer's keys are. Empty means discover it: the
	// jwks_uri of the issuer's authorization server metadata (RFC 8414),
	// else of its OpenID Connect configuration, with the well-known path
	// inserted before an issuer's own path as RFC 8414 (and the MCP
	// specification) ask.
	JWKSURL string
	// Audience is the aud value tokens must carry; empty means Resource.
	// Set it only for an authorization server that cannot put the
	// resource URL in tokens (some use an API identifier instead).
	Audience string
	// Scopes are published as scopes_supported; a token must carry all of
	// them (in its space-separated scope claim or its scp claim).
	Scopes []string
	// AgentClaim names the claim that identifies the caller (default
	// "sub"). It may hold a string or an array of strings (such as
	// "groups"); for an array, the first value that Agents maps wins.
	AgentClaim string
	// Agents maps a value of AgentClaim to the agent it acts as. The key
	// "*" maps any other value; a token without the claim maps to none.
	Agents map[string]string
	// HTTPClient fetches metadata and keys. The gateway passes one that
	// goes through Nexus's SSRF guard; nil means a plain client.
	HTTPClient *http.Client
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Leeway is the clock skew allowed on exp, nbf and iat; 0 means 60 s.
	Leeway time.Duration
}

// Validator checks access tokens and serves the metadata. It is safe for
// concurrent use; New makes one.
type Validator struct {
	cfg    Config
	parser *jwt.Parser
	client *http.Client

	mu        sync.Mutex
	set       *keySet   // nil until a fetch succeeds
	jwksURL   string    // configured or discovered; "" = discover
	lastFetch time.Time // when the last fetch started (the refetch gap)
	failed    time.Time // when the last fetch failed; zero after a success
	lastErr   error     // that failure
	flight    *flight   // the fetch in progress, shared by its waiters
}

// New checks cfg and makes a Validator. Nothing is fetched until the first
// token arrives, so a gateway starts while its issuer is down.
func New(cfg Config) (*Validator, error) {
	if err := checkURL("resource", cfg.Resource, "the gateway's public URL (gateway { public_url = \"https://...\" })"); err != nil {
		return nil, err
	}
	if err := checkURL("issuer", cfg.Issuer, "the authorization server's issuer identifier, exactly as in its tokens' iss claim"); err != nil {
		return nil, err
	}
	if u, _ := url.Parse(cfg.Issuer); u.RawQuery != "" {
		return nil, fmt.Errorf("oauth issuer %q has a query; an issuer identifier has none (RFC 8414)", cfg.Issuer)
	}
	if cfg.JWKSURL != "" {
		if err := checkURL("jwks_url", cfg.JWKSURL, "the URL of the issuer's JSON Web Key Set, or leave it unset to discover it"); err != nil {
			return nil, err
		}
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.Resource
	}
	if cfg.AgentClaim == "" {
		cfg.AgentClaim = defaultClaim
	}
	for _, s := range cfg.Scopes {
		if !validScope(s) {
			return nil, fmt.Errorf("oauth scope %q is not a scope token: one or more printable ASCII characters without spaces, quotes or backslashes (RFC 6749 section 3.3)", s)
		}
	}
	if len(cfg.Agents) == 0 {
		return nil, errors.New(`oauth maps no claim value to an agent: set agents = { "alice@example.com" = "claude" } (or "*" for everyone the issuer vouches for)`)
	}
	for k, a := range cfg.Agents {
		if k == "" || a == "" {
			return nil, fmt.Errorf("oauth agents: %q = %q: both the claim value and the agent must be non-empty", k, a)
		}
	}
	if cfg.Leeway < 0 {
		return nil, fmt.Errorf("oauth leeway %v is negative", cfg.Leeway)
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = defaultSkew
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	cfg.Scopes = slices.Clone(cfg.Scopes)
	agents := make(map[string]string, len(cfg.Agents))
	for k, a := range cfg.Agents {
		agents[k] = a
	}
	cfg.Agents = agents
	v := &Validator{cfg: cfg, client: client, jwksURL: cfg.JWKSURL}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(algorithms),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(cfg.Leeway),
		jwt.WithTimeFunc(cfg.Now),
		jwt.WithJSONNumber(),
		jwt.WithStrictDecoding(),
	)
	return v, nil
}

// checkURL enforces OAuth 2.1's communication security on a configured
// URL: absolute, https (http only to this machine), no fragment, no user.
func checkURL(name, raw, what string) error {
	if raw == "" {
		return fmt.Errorf("oauth %s is required: %s", name, what)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("oauth %s %q is not a URL: %v", name, raw, err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("oauth %s %q is not an absolute https URL; it should be %s", name, raw, what)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return fmt.Errorf("oauth %s %q uses http: OAuth 2.1 requires https except to this machine (localhost, 127.0.0.1, ::1); use https://%s", name, raw, strings.TrimPrefix(raw, "http://"))
	}
	if u.User != nil {
		return fmt.Errorf("oauth %s %q carries user information; remove it", name, raw)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return fmt.Errorf("oauth %s %q has a fragment (#...); remove it", name, raw)
	}
	return nil
}

// isLoopback reports whether host (no port) is this machine.
func isLoopback(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// validScope reports whether s is an RFC 6749 scope-token.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Error is a refused token. Status is 401 when the token is missing or not
// acceptable (the client should get a new one) and 403 when it is a good
// token without access to the gateway.
type Error struct {
	Status int
	// Code is the RFC 6750 error: "invalid_token" or "insufficient_scope";
	// empty when no token was sent at all (RFC 6750 section 3.1).
	Code string
	// Description says what is wrong and how to fix it, for people.
	Description string
	// Scope is the scope a client should ask for, with insufficient_scope.
	Scope string
}

func (e *Error) Error() string { return e.Description }

// maxHeaderDescription caps error_description in the challenge header.
const maxHeaderDescription = 1024

// WWWAuthenticate renders the challenge for this refusal (RFC 6750, with
// RFC 9728's resource_metadata pointing at metadataURL). Values are
// quoted strings: quotes and backslashes are escaped, control characters
// become spaces and characters outside ASCII become '?', since a header
// carries only ASCII.
func (e *Error) WWWAuthenticate(metadataURL string) string {
	var b strings.Builder
	b.WriteString("Bearer")
	sep := " "
	param := func(name, value string) {
		b.WriteString(sep)
		b.WriteString(name)
		b.WriteString(`="`)
		b.WriteString(quote(value))
		b.WriteString(`"`)
		sep = ", "
	}
	if metadataURL != "" {
		param("resource_metadata", metadataURL)
	}
	if e.Code != "" {
		param("error", e.Code)
		d := e.Description
		if len(d) > maxHeaderDescription {
			d = d[:maxHeaderDescription] + "..."
		}
		if d != "" {
			param("error_description", d)
		}
	}
	if e.Code == "insufficient_scope" && e.Scope != "" {
		param("scope", e.Scope)
	}
	return b.String()
}

// quote escapes s for the inside of an HTTP quoted-string.
func quote(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		case r > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: fmt.Sprintf(format, args...)}
}

func forbidden(scope, format string, args ...any) *Error {
	return &Error{Status: http.StatusForbidden, Code: "insufficient_scope", Scope: scope, Description: fmt.Sprintf(format, args...)}
}

// Agent validates token (the bearer token of a request, without "Bearer ")
// and returns the agent it acts as. A refused token is an *Error; any
// other error means the token could not be judged because the issuer's
// keys could not be fetched (or ctx ended first).
func (v *Validator) Agent(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", &Error{Status: http.StatusUnauthorized,
			Description: fmt.Sprintf("no access token: send Authorization: Bearer <token> with an access token from %s for %s", v.cfg.Issuer, v.cfg.Resource)}
	}
	if len(token) > MaxTokenBytes {
		return "", invalid("the access token is %d bytes, over the %d-byte limit; the authorization server must issue smaller tokens (fewer claims)", len(token), MaxTokenBytes)
	}
	switch n := strings.Count(token, ".") + 1; n {
	case 3:
	case 5:
		return "", invalid("the access token is an encrypted JWT (JWE); the gateway accepts only signed JWT access tokens: configure %s to issue unencrypted JWT access tokens for %s", v.cfg.Issuer, v.cfg.Audience)
	default:
		return "", invalid("the access token is not a JWT (a signed JWT is 3 base64url parts joined by dots; this is %d): the gateway accepts only JWT access tokens; configure %s to issue JWT (not opaque) access tokens for %s", n, v.cfg.Issuer, v.cfg.Audience)
	}

	claims := jwt.MapClaims{}
	tok, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		if _, ok := t.Header["crit"]; ok {
			return nil, invalid("the access token's header lists critical extensions (crit) the gateway does not understand, so it must refuse the token (RFC 7515 section 4.1.11)")
		}
		kid, ok := t.Header["kid"].(string)
		if !ok && t.Header["kid"] != nil {
			return nil, invalid("the access token's key id (kid) is not a string")
		}
		return v.key(ctx, kid, t.Method.Alg())
	})
	if err != nil {
		return "", v.explain(err, tok, claims)
	}

	if missing := missingScopes(claims, v.cfg.Scopes); len(missing) > 0 {
		return "", forbidden(strings.Join(v.cfg.Scopes, " "),
			"the access token lacks the scope %s that the gateway requires; ask %s for a token with scope %q",
			strings.Join(missing, " "), v.cfg.Issuer, strings.Join(v.cfg.Scopes, " "))
	}
	return v.agentFor(claims)
}

// explain turns a parse failure into a refusal that says what to fix.
// Claim errors only happen after the signature verified, so the claims
// quoted in them are the issuer's.
func (v *Validator) explain(err error, tok *jwt.Token, claims jwt.MapClaims) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var fe *fetchError
	if errors.As(err, &fe) {
		return fe
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("checking the access token: %w", err)
	}
	now := v.cfg.Now()
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return invalid("the access token is malformed: %v", strings.TrimPrefix(err.Error(), jwt.ErrTokenMalformed.Error()+": "))
	case tok != nil && !slices.Contains(algorithms, fmt.Sprint(tok.Header["alg"])):
		alg, _ := tok.Header["alg"].(string)
		if alg == "" {
			return invalid("the access token's header names no signature algorithm (alg)")
		}
		why := ""
		switch {
		case strings.EqualFold(alg, "none"):
			why = " (an unsigned token)"
		case strings.HasPrefix(alg, "HS"):
			why = " (a shared-secret signature, which a resource server cannot check against public keys)"
		}
		return invalid("the access token's algorithm is %q%s; the gateway accepts only %s signatures from %s's key set", quoteValue(alg), why, strings.Join(algorithms, ", "), v.cfg.Issuer)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return invalid("the access token's signature does not verify against %s's key: it was not issued by %s, or it was altered", v.cfg.Issuer, v.cfg.Issuer)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return invalid("the access token cannot be verified: %v", err)
	}

	// Claims, most fundamental first.
	if errors.Is(err, jwt.ErrTokenInvalidIssuer) || claimMissing(claims, "iss") {
		iss, _ := claims["iss"].(string)
		if iss == "" {
			return invalid("the access token has no issuer (iss claim); the gateway accepts tokens from %s only", v.cfg.Issuer)
		}
		hint := ""
		if strings.TrimSuffix(iss, "/") == strings.TrimSuffix(v.cfg.Issuer, "/") {
			hint = fmt.Sprintf(" (they differ only in a trailing slash: set the gateway's oauth issuer to exactly %q)", quoteValue(iss))
		}
		return invalid("the access token was issued by %q; the gateway accepts tokens from %q only%s", quoteValue(iss), v.cfg.Issuer, hint)
	}
	if errors.Is(err, jwt.ErrTokenInvalidAudience) || claimMissing(claims, "aud") {
		aud, _ := claims.GetAudience()
		if len(aud) == 0 {
			return invalid("the access token has no audience (aud claim); the gateway is %s: the authorization server must issue tokens for this resource (RFC 8707 resource parameter)", v.cfg.Audience)
		}
		hint := ""
		for _, a := range aud {
			if strings.TrimSuffix(a, "/") == strings.TrimSuffix(v.cfg.Audience, "/") {
				hint = fmt.Sprintf(" (they differ only in a trailing slash: make the gateway's public_url exactly %q, or the client's resource parameter exactly %q)", quoteValue(a), v.cfg.Audience)
			}
		}
		return invalid("token audience is [%s]; the gateway is %s: the authorization server must issue tokens for this resource (RFC 8707 resource parameter)%s", quoteValue(strings.Join(aud, " ")), v.cfg.Audience, hint)
	}
	if claimMissing(claims, "exp") {
		return invalid("the access token has no expiry (exp claim); the gateway accepts only tokens that expire: configure %s to set exp", v.cfg.Issuer)
	}
	if errors.Is(err, jwt.ErrTokenExpired) {
		exp, _ := claims.GetExpirationTime()
		return invalid("the access token expired at %s (now %s); get a new one from %s", stamp(exp), now.UTC().Format(time.RFC3339), v.cfg.Issuer)
	}
	if errors.Is(err, jwt.ErrTokenNotValidYet) {
		nbf, _ := claims.GetNotBefore()
		return invalid("the access token is not valid before %s (now %s, allowing %v of clock skew); check the clocks of the gateway and %s", stamp(nbf), now.UTC().Format(time.RFC3339), v.cfg.Leeway, v.cfg.Issuer)
	}
	if errors.Is(err, jwt.ErrTokenUsedBeforeIssued) {
		iat, _ := claims.GetIssuedAt()
		return invalid("the access token was issued in the future, at %s (now %s, allowing %v of clock skew); check the clocks of the gateway and %s", stamp(iat), now.UTC().Format(time.RFC3339), v.cfg.Leeway, v.cfg.Issuer)
	}
	if errors.Is(err, jwt.ErrInvalidType) {
		for _, name := range []string{"exp", "nbf", "iat", "iss", "aud"} {
			switch claims[name].(type) {
			case nil, json.Number:
			case string:
				if name == "iss" || name == "aud" {
					continue
				}
				return invalid("the access token's %s claim is a string; it must be a number of seconds since 1970 (RFC 7519)", name)
			case []any:
				if name == "aud" {
					continue
				}
				return invalid("the access token's %s claim is an array; RFC 7519 makes it a single value", name)
			default:
				return invalid("the access token's %s claim has the wrong type (RFC 7519)", name)
			}
		}
		return invalid("the access token has a claim of the wrong type: %v", err)
	}
	return invalid("the access token was refused: %v", err)
}

// claimMissing reports whether a required claim is absent or empty.
func claimMissing(claims jwt.MapClaims, name string) bool {
	switch c := claims[name].(type) {
	case nil:
		return true
	case string:
		return c == ""
	case []any:
		return len(c) == 0
	}
	return false
}

func stamp(d *jwt.NumericDate) string {
	if d == nil {
		return "?"
	}
	return d.UTC().Format(time.RFC3339)
}

// quoteValue shortens a value from a token for a message.
func quoteValue(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// agentFor maps the agent claim to an agent.
func (v *Validator) agentFor(claims jwt.MapClaims) (string, error) {
	name := v.cfg.AgentClaim
	values := claimStrings(claims[name])
	if len(values) == 0 {
		return "", forbidden("", "the access token has no %s claim (a string or an array of strings), which names the agent; configure %s to include it, or set the oauth agent_claim to a claim it does include", name, v.cfg.Issuer)
	}
	for _, val := range values {
		if val == "*" {
			continue // a claim value cannot pose as the wildcard
		}
		if a, ok := v.cfg.Agents[val]; ok {
			return a, nil
		}
	}
	if a, ok := v.cfg.Agents["*"]; ok {
		return a, nil
	}
	shown := strings.Join(values, ", ")
	if _, isArray := claims[name].([]any); isArray {
		shown = "[" + shown + "]"
	}
	return "", forbidden("", "the access token's %s claim is %s, which maps to no agent of this gateway; add it to the oauth agents (or \"*\" for anyone %s vouches for)", name, quoteValue(shown), v.cfg.Issuer)
}

// claimStrings reads a claim that is a string or an array of strings
// (numbers count as their decimal text); anything else reads as nothing.
func claimStrings(c any) []string {
	switch c := c.(type) {
	case string:
		if c == "" {
			return nil
		}
		return []string{c}
	case json.Number:
		return []string{c.String()}
	case []any:
		var out []string
		for _, e := range c {
			switch e := e.(type) {
			case string:
				if e != "" {
					out = append(out, e)
				}
			case json.Number:
				out = append(out, e.String())
			}
		}
		return out
	}
	return nil
}

// scopesOf reads a token's scopes: the space-separated scope claim (RFC
// 8693, RFC 9068) and the scp claim some issuers use instead, as an array
// or a space-separated string.
func scopesOf(claims jwt.MapClaims) map[string]bool {
	have := map[string]bool{}
	if s, ok := claims["scope"].(string); ok {
		for _, x := range strings.Fields(s) {
			have[x] = true
		}
	}
	switch scp := claims["scp"].(type) {
	case string:
		for _, x := range strings.Fields(scp) {
			have[x] = true
		}
	case []any:
		for _, e := range scp {
			if s, ok := e.(string); ok {
				for _, x := range strings.Fields(s) {
					have[x] = true
				}
			}
		}
	}
	return have
}

// missingScopes lists the required scopes the token lacks, sorted.
func missingScopes(claims jwt.MapClaims, required []string) []string {
	if len(required) == 0 {
		return nil
	}
	have := scopesOf(claims)
	var missing []string
	for _, s := range required {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	sort.Strings(missing)
	return missing
}
