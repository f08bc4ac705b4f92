// Package jwtauth is the gateway's OAuth 2.1 resource-server side: it
// validates JWT access tokens an authorization server issued for the
// gateway (signature from the issuer's JWKS, issuer, audience, expiry,
// scopes), maps a claim to an agent, and serves the gateway's Protected
// Resource Metadata (RFC 9728).
//
// Everything fetched is bounded: a 10 s timeout and the caller's context
// per fetch, 1 MiB per document, tokens of at most 8 KiB. The key set is
// cached (Cache-Control max-age, clamped to 1 minute..24 hours, default 10
// minutes) and fetched again for an unknown key id at most once every 30
// s, so a flood of made-up key ids cannot make the gateway hammer the
// issuer; concurrent validations share one fetch.
package jwtauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Limits.
const (
	MaxToken    = 8 << 10
	MaxDocument = 1 << 20
	fetchTime   = 10 * time.Second
	refetchGap  = 30 * time.Second
	defaultTTL  = 10 * time.Minute
)

// Config configures a Validator.
type Config struct {
	Resource   string   // the gateway's resource URL; the default audience
	Issuer     string   // the authorization server
	JWKSURL    string   // "" = discovered from the issuer's metadata
	Audience   string   // "" = Resource
	Scopes     []string // required of every token, if set
	AgentClaim string   // default "sub"
	Agents     map[string]string
	HTTPClient *http.Client
	Now        func() time.Time
	Leeway     time.Duration // default 60 s
}

// Validator checks access tokens. It is safe for concurrent use.
type Validator struct {
	cfg Config

	mu      sync.Mutex
	keys    map[string]crypto.PublicKey // by kid ("" for keys without one)
	expires time.Time                   // when the cached set is stale
	lastTry time.Time                   // the last fetch, for the refetch gap
	jwksURL string
	fetch   *fetchCall // the fetch in flight, shared
}

type fetchCall struct {
	done chan struct{}
	err  error
}

// Error is a refused token: Status 401 (no, bad or expired token) or 403
// (a valid token without access), with the RFC 6750 error code.
type Error struct {
	Status      int
	Code        string // invalid_token, insufficient_scope
	Description string
	Scope       string // for insufficient_scope
}

func (e *Error) Error() string { return e.Description }

// WWWAuthenticate is the challenge for this refusal.
func (e *Error) WWWAuthenticate(metadataURL string) string {
	s := `Bearer resource_metadata="` + quote(metadataURL) + `", error="` + e.Code + `", error_description="` + quote(e.Description) + `"`
	if e.Scope != "" {
		s += `, scope="` + quote(e.Scope) + `"`
	}
	return s
}

func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", " ", "\r", " ").Replace(s)
}

func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnauthorized, Code: "invalid_token", Description: fmt.Sprintf(format, args...)}
}

// New checks cfg and makes a Validator. Nothing is fetched until the first
// token arrives.
func New(cfg Config) (*Validator, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("the gateway's oauth needs an issuer")
	}
	if cfg.Resource == "" {
		return nil, errors.New("the gateway's oauth needs the gateway's public URL (gateway { public_url = ... }): tokens must name it as their audience")
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.Resource
	}
	if cfg.AgentClaim == "" {
		cfg.AgentClaim = "sub"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: fetchTime}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Leeway <= 0 {
		cfg.Leeway = time.Minute
	}
	if len(cfg.Agents) == 0 {
		return nil, errors.New("the gateway's oauth maps no claim value to an agent: set agents = { \"alice@example.com\" = \"claude\" } (or \"*\" for everyone)")
	}
	return &Validator{cfg: cfg, jwksURL: cfg.JWKSURL}, nil
}

// algorithms are the signatures accepted: never "none", never HMAC (whose
// key would be the public key: the classic confusion attack).
var algorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Agent validates token and returns the agent its claim maps to.
func (v *Validator) Agent(ctx context.Context, token string) (string, error) {
	if len(token) > MaxToken {
		return "", invalid("the access token is over %d bytes", MaxToken)
	}
	claims := jwt.MapClaims{}
	parser := jwt.NewParser(jwt.WithValidMethods(algorithms), jwt.WithIssuer(v.cfg.Issuer), jwt.WithAudience(v.cfg.Audience),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(v.cfg.Leeway), jwt.WithTimeFunc(v.cfg.Now))
	_, err := parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		return v.key(ctx, kid, t.Method.Alg())
	})
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return "", e
		}
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			return "", invalid("the access token has expired; get a new one from %s", v.cfg.Issuer)
		case errors.Is(err, jwt.ErrTokenInvalidAudience):
			return "", invalid("the access token is not for this gateway (its audience is %v; the gateway is %s): the authorization server must issue tokens for this resource (RFC 8707 resource parameter)", claims["aud"], v.cfg.Audience)
		case errors.Is(err, jwt.ErrTokenInvalidIssuer):
			return "", invalid("the access token was issued by %v, not %s", claims["iss"], v.cfg.Issuer)
		case errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
			return "", invalid("the access token is not valid yet (check the clocks of the gateway and %s)", v.cfg.Issuer)
		case errors.Is(err, jwt.ErrTokenSignatureInvalid):
			return "", invalid("the access token's signature does not verify against %s's keys", v.cfg.Issuer)
		}
		return "", invalid("the access token was refused: %v", err)
	}
	if missing := v.missingScopes(claims); len(missing) > 0 {
		return "", &Error{Status: http.StatusForbidden, Code: "insufficient_scope", Scope: strings.Join(v.cfg.Scopes, " "),
			Description: "the access token lacks the scope(s) " + strings.Join(missing, " ")}
	}
	for _, val := range claimValues(claims[v.cfg.AgentClaim]) {
		if a, ok := v.cfg.Agents[val]; ok {
			return a, nil
		}
	}
	if a, ok := v.cfg.Agents["*"]; ok {
		return a, nil
	}
	return "", &Error{Status: http.StatusForbidden, Code: "insufficient_scope",
		Description: fmt.Sprintf("the token's %s claim (%v) maps to no agent of this gateway; add it to the gateway's oauth agents", v.cfg.AgentClaim, claims[v.cfg.AgentClaim])}
}

// claimValues reads a string or an array of strings.
func claimValues(c any) []string {
	switch c := c.(type) {
	case string:
		return []string{c}
	case []any:
		var out []string
		for _, e := range c {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// missingScopes lists the required scopes the token lacks (scope: a
// space-separated string; scp: an array or a string).
func (v *Validator) missingScopes(claims jwt.MapClaims) []string {
	if len(v.cfg.Scopes) == 0 {
		return nil
	}
	have := map[string]bool{}
	if s, ok := claims["scope"].(string); ok {
		for _, x := range strings.Fields(s) {
			have[x] = true
		}
	}
	for _, x := range claimValues(claims["scp"]) {
		for _, y := range strings.Fields(x) {
			have[y] = true
		}
	}
	var missing []string
	for _, s := range v.cfg.Scopes {
		if !have[s] {
			missing = append(missing, s)
		}
	}
	return missing
}

// key finds the key for kid, fetching the set when it is stale or, at
// most once per refetchGap, when kid is unknown.
func (v *Validator) key(ctx context.Context, kid, alg string) (any, error) {
	for attempt := 0; ; attempt++ {
		v.mu.Lock()
		now := v.cfg.Now()
		fresh := v.keys != nil && now.Before(v.expires)
		k, ok := v.pick(kid, alg)
		canRefetch := now.Sub(v.lastTry) >= refetchGap
		v.mu.Unlock()
		if ok && fresh {
			return k, nil
		}
		if attempt > 0 || (fresh && !canRefetch) {
			if ok {
				return k, nil
			}
			return nil, invalid("the access token's key id %q is not in %s's key set", kid, v.cfg.Issuer)
		}
		if err := v.refresh(ctx); err != nil {
			if ok { // a stale key beats none while the issuer is unreachable
				return k, nil
			}
			return nil, err
		}
	}
}

// pick chooses the key for kid; without a kid, the only key of a fitting
// type. Called with mu held.
func (v *Validator) pick(kid, alg string) (crypto.PublicKey, bool) {
	if kid != "" {
		k, ok := v.keys[kid]
		return k, ok && fits(k, alg)
	}
	var found crypto.PublicKey
	n := 0
	for _, k := range v.keys {
		if fits(k, alg) {
			found, n = k, n+1
		}
	}
	return found, n == 1
}

func fits(k crypto.PublicKey, alg string) bool {
	switch k.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		return strings.HasPrefix(alg, "ES")
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// refresh fetches the key set; concurrent callers share one fetch.
func (v *Validator) refresh(ctx context.Context) error {
	v.mu.Lock()
	if f := v.fetch; f != nil {
		v.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &fetchCall{done: make(chan struct{})}
	v.fetch = f
	v.lastTry = v.cfg.Now()
	v.mu.Unlock()

	keys, ttl, err := v.fetchKeys(ctx)
	v.mu.Lock()
	if err == nil {
		v.keys, v.expires = keys, v.cfg.Now().Add(ttl)
	}
	v.fetch = nil
	v.mu.Unlock()
	f.err = err
	close(f.done)
	return err
}

func (v *Validator) fetchKeys(ctx context.Context) (map[string]crypto.PublicKey, time.Duration, error) {
	jwks := v.jwksURL
	if jwks == "" {
		var err error
		if jwks, err = v.discover(ctx); err != nil {
			return nil, 0, err
		}
		v.mu.Lock()
		v.jwksURL = jwks
		v.mu.Unlock()
	}
	body, hdr, err := v.get(ctx, jwks)
	if err != nil {
		return nil, 0, err
	}
	keys, err := ParseJWKS(body)
	if err != nil {
		return nil, 0, invalid("the key set at %s is unusable: %v", jwks, err)
	}
	return keys, cacheTTL(hdr.Get("Cache-Control")), nil
}

// discover finds jwks_uri in the issuer's metadata (RFC 8414, then OpenID
// Connect), inserting the well-known path before an issuer's own path.
func (v *Validator) discover(ctx context.Context) (string, error) {
	u, err := url.Parse(v.cfg.Issuer)
	if err != nil {
		return "", invalid("the issuer %q is not a URL", v.cfg.Issuer)
	}
	path := strings.TrimSuffix(u.Path, "/")
	var tried []string
	for _, wk := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		for _, p := range []string{wk + path, path + wk} {
			m := *u
			m.Path, m.RawQuery = p, ""
			if contains(tried, m.String()) {
				continue
			}
			tried = append(tried, m.String())
			body, _, err := v.get(ctx, m.String())
			if err != nil {
				continue
			}
			var meta struct {
				JWKSURI string `json:"jwks_uri"`
			}
			if json.Unmarshal(body, &meta) == nil && meta.JWKSURI != "" {
				return meta.JWKSURI, nil
			}
		}
	}
	return "", invalid("no jwks_uri found in %s's metadata (tried %s); set jwks_url in the gateway's oauth block", v.cfg.Issuer, strings.Join(tried, ", "))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// get fetches a document within the limits.
func (v *Validator) get(ctx context.Context, rawURL string) ([]byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchTime)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, nil, invalid("cannot fetch %s: %v", rawURL, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, invalid("fetching %s failed: %v (is the issuer reachable from the gateway?)", rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, invalid("fetching %s answered HTTP %d", rawURL, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocument+1))
	if err != nil {
		return nil, nil, invalid("reading %s failed: %v", rawURL, err)
	}
	if len(body) > MaxDocument {
		return nil, nil, invalid("%s is over %d bytes", rawURL, MaxDocument)
	}
	return body, resp.Header, nil
}

// cacheTTL reads max-age, clamped to 1 minute..24 hours.
func cacheTTL(cc string) time.Duration {
	for _, part := range strings.Split(cc, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.EqualFold(k, "max-age") {
			if n, err := strconv.Atoi(val); err == nil {
				return min(max(time.Duration(n)*time.Second, time.Minute), 24*time.Hour)
			}
		}
	}
	return defaultTTL
}

// ParseJWKS reads a JSON Web Key Set's public signing keys (RSA, EC P-256,
// P-384, P-521, Ed25519), by kid. Keys for encryption and of other types
// are skipped; a set with no usable key is an error.
func ParseJWKS(b []byte) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			Use string `json:"use"`
			Crv string `json:"crv"`
			N   string `json:"n"`
			E   string `json:"e"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %v", err)
	}
	out := map[string]crypto.PublicKey{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		var key crypto.PublicKey
		switch k.Kty {
		case "RSA":
			n, e := b64int(k.N), b64int(k.E)
			if n == nil || e == nil || !e.IsInt64() || e.Int64() < 3 || n.BitLen() < 2048 {
				continue // too weak or malformed
			}
			key = &rsa.PublicKey{N: n, E: int(e.Int64())}
		case "EC":
			var c elliptic.Curve
			switch k.Crv {
			case "P-256":
				c = elliptic.P256()
			case "P-384":
				c = elliptic.P384()
			case "P-521":
				c = elliptic.P521()
			default:
				continue
			}
			x, err1 := base64.RawURLEncoding.DecodeString(k.X)
			y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
			size := (c.Params().BitSize + 7) / 8
			if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
				continue
			}
			// The parse checks the point is on the curve: keys come from
			// outside.
			pk, err := ecdsa.ParseUncompressedPublicKey(c, append(append([]byte{4}, x...), y...))
			if err != nil {
				continue
			}
			key = pk
		case "OKP":
			if k.Crv != "Ed25519" {
				continue
			}
			x, err := base64.RawURLEncoding.DecodeString(k.X)
			if err != nil || len(x) != ed25519.PublicKeySize {
				continue
			}
			key = ed25519.PublicKey(x)
		default:
			continue
		}
		out[k.Kid] = key
	}
	if len(out) == 0 {
		return nil, errors.New("it holds no usable signing key (RSA of 2048 bits or more, EC P-256/384/521, Ed25519)")
	}
	return out, nil
}

func b64int(s string) *big.Int {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil
	}
	return new(big.Int).SetBytes(b)
}

// MetadataURL is where RFC 9728 puts the metadata of resource: the
// well-known path inserted before the resource's own path.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	m := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")}
	return m.String()
}

// MetadataHandler serves the gateway's Protected Resource Metadata.
func (v *Validator) MetadataHandler() http.Handler {
	doc := map[string]any{
		"resource":                 v.cfg.Resource,
		"authorization_servers":    []string{v.cfg.Issuer},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "Nexus MCP gateway",
	}
	if len(v.cfg.Scopes) > 0 {
		doc["scopes_supported"] = v.cfg.Scopes
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		w.Write(b)
	})
}
