package auth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Authorizer adds credentials to requests and reacts to challenges. A
// transport holds one per server and needs to know nothing about OAuth:
//
//	for attempt := 0; ; attempt++ {
//		req := newRequest()
//		if err := a.Authorize(ctx, req); err != nil { return err }
//		resp, err := client.Do(req)
//		if err != nil { return err }
//		if resp.StatusCode == 401 || resp.StatusCode == 403 {
//			retry, err := a.Challenge(ctx, resp)
//			drainAndClose(resp)
//			if err != nil { return err }
//			if retry { continue }
//		}
//		...
//	}
//
// Challenge bounds the loop itself: it returns an error once the server
// has rejected fresh tokens too often, so the transport needs no counter.
type Authorizer interface {
	// Authorize sets the Authorization header (if it has a token) on req.
	Authorize(ctx context.Context, req *http.Request) error
	// Challenge handles a 401 or 403 response: it runs discovery,
	// registration, the grant or step-up as needed and reports whether the
	// request should be retried. Bounded: at most MaxAttempts (3)
	// authorizations for one scope set in a row; a 401 forever ends.
	Challenge(ctx context.Context, resp *http.Response) (retry bool, err error)
}

var _ Authorizer = (*Client)(nil)

// Client is the OAuth 2.1 client of one MCP server. It is safe for
// concurrent use; token acquisition is serialized, so concurrent 401s
// start one login, and requests that raced with it are simply retried
// with the new token.
type Client struct {
	cfg      Config
	resource string // canonical server URL; the token store key
	hc       *http.Client
	log      hclog.Logger
	store    store
	now      func() time.Time
	opener   Opener
	signer   *assertionSigner

	flow chan struct{} // one-slot semaphore: token acquisition in progress

	mu        sync.Mutex
	rec       *record
	attempts  map[string]int
	lastGrant time.Time
	raced     int // retries granted without a new authorization, in a row

	// DPoP: the server asked for DPoP-bound tokens; the latest nonce of
	// each origin (authorization and resource servers, RFC 9449 sections
	// 8 and 9); use_dpop_nonce answers to a nonce already sent, in a row.
	dpopNeeded bool
	nonces     map[string]string
	nonceLoops int
	key        struct {
		pem string
		key *dpopKey
	}
}

// racedLimit bounds the retries Challenge grants because the rejected
// request carried an older token than the current one.
const racedLimit = 16

// New validates cfg and returns a Client with any stored token loaded.
// It does no network I/O.
func New(cfg Config) (*Client, error) {
	if cfg.ServerURL == "" {
		return nil, configError(&cfg, "the server has no URL", nil)
	}
	res, err := canonicalResource(cfg.ServerURL)
	if err != nil {
		return nil, configError(&cfg, "invalid server URL "+strconv.Quote(cfg.ServerURL), err)
	}
	if err := checkSecureURL(res); err != nil {
		return nil, configError(&cfg, "refusing to send OAuth tokens to "+res, errors.New("the server URL must be https (plain http is only allowed on localhost)"))
	}
	for _, e := range []struct{ name, u string }{{"auth_url", cfg.AuthURL}, {"token_url", cfg.TokenURL}} {
		if e.u == "" {
			continue
		}
		if err := checkSecureURL(e.u); err != nil {
			return nil, configError(&cfg, "invalid "+e.name+" "+strconv.Quote(e.u), errors.New("it must be an https URL (plain http is only allowed on localhost)"))
		}
	}
	if cfg.ClientMetadataURL != "" {
		u, err := url.Parse(cfg.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") == "" {
			return nil, configError(&cfg, "invalid client metadata document URL "+strconv.Quote(cfg.ClientMetadataURL), errors.New("it must be an https URL with a path, such as https://example.com/client.json"))
		}
	}
	if cfg.RedirectURI != "" {
		if _, _, err := redirectListenAddr(cfg.RedirectURI); err != nil {
			return nil, configError(&cfg, "invalid redirect_uri "+strconv.Quote(cfg.RedirectURI), err)
		}
	}
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = defaultListenAddr
	} else if h, _, err := net.SplitHostPort(cfg.ListenAddr); err != nil || !isLoopbackHost(h) {
		return nil, configError(&cfg, "invalid redirect listener address "+strconv.Quote(cfg.ListenAddr), errors.New("it must be a loopback host:port such as 127.0.0.1:0"))
	}
	switch cfg.DPoP {
	case "":
		cfg.DPoP = DPoPAuto
	case DPoPAuto, DPoPOn, DPoPOff:
	default:
		return nil, configError(&cfg, "invalid dpop mode "+strconv.Quote(cfg.DPoP), errors.New("use auto, on or off"))
	}
	switch cfg.Grant {
	case GrantAuthorizationCode:
	case GrantClientCredentials:
		if cfg.ClientID == "" {
			return nil, configError(&cfg, "the client-credentials grant needs a client_id", nil)
		}
		if cfg.ClientSecret == "" && len(cfg.PrivateKeyPEM) == 0 {
			return nil, configError(&cfg, "the client-credentials grant needs a client_secret or a private key", nil)
		}
	case GrantEnterprise:
		e := cfg.Enterprise
		switch {
		case cfg.ClientID == "":
			return nil, configError(&cfg, "enterprise-managed authorization needs the client_id registered at the MCP authorization server", nil)
		case e == nil || (e.IDToken == "" && e.IDTokenFunc == nil):
			return nil, configError(&cfg, "enterprise-managed authorization needs the ID token from the enterprise IdP login", nil)
		case e.IdPTokenURL == "" && e.IdPIssuer == "":
			return nil, configError(&cfg, "enterprise-managed authorization needs the IdP's token endpoint or issuer", nil)
		}
		for _, u := range []string{e.IdPTokenURL, e.IdPIssuer} {
			if u != "" && checkSecureURL(u) != nil {
				return nil, configError(&cfg, "invalid IdP URL "+strconv.Quote(u), errors.New("it must be an https URL (plain http is only allowed on localhost)"))
			}
		}
	case GrantJWTBearer:
		if cfg.Assertion == "" && cfg.AssertionFile == "" && cfg.AssertionFunc == nil {
			return nil, configError(&cfg, "the jwt_bearer grant needs the workload's JWT", errors.New("set assertion (the JWT itself, e.g. from ${env:...}) or assertion_file (a file the platform keeps current)"))
		}
	default:
		return nil, configError(&cfg, "unknown grant "+strconv.Itoa(int(cfg.Grant)), nil)
	}

	c := &Client{
		cfg:      cfg,
		resource: res,
		hc:       cfg.HTTPClient,
		log:      cfg.Logger,
		now:      cfg.now,
		opener:   cfg.Opener,
		flow:     make(chan struct{}, 1),
		attempts: map[string]int{},
		nonces:   map[string]string{},
	}
	if len(cfg.PrivateKeyPEM) > 0 {
		s, err := newAssertionSigner(cfg.PrivateKeyPEM, cfg.SigningAlg, cfg.KeyID)
		if err != nil {
			return nil, configError(&cfg, "cannot use the private key", err)
		}
		c.signer = s
	}
	if c.hc == nil {
		c.hc = NewHTTPClient(cfg.AllowPrivateNetworks)
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	c.log = c.log.Named("oauth").With("server", cfg.ServerName)
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg.ClientName == "" {
		c.cfg.ClientName = defaultClientName
	}
	if c.cfg.RedirectTimeout <= 0 {
		c.cfg.RedirectTimeout = defaultRedirectTimeout
	}
	if c.cfg.MaxAttempts <= 0 {
		c.cfg.MaxAttempts = defaultMaxAttempts
	}
	if c.cfg.Out == nil {
		c.cfg.Out = os.Stderr
	}
	if c.opener == nil {
		c.opener = c.defaultOpener
	}
	if !cfg.NoStore {
		dir := cfg.TokenDir
		if dir == "" {
			if dir, err = defaultTokenDir(); err != nil {
				return nil, configError(&cfg, "cannot find the home directory for the token store", err)
			}
		}
		c.store.dir = dir
	}
	c.store.warn = c.log.Warn
	rec, err := c.store.load(res)
	if err != nil {
		c.log.Warn("ignoring the stored token", "error", err)
		rec = nil
	}
	if rec != nil && rec.Token != nil && !c.tokenFitsConfig(rec) {
		c.log.Debug("stored token was issued for another client or grant; not used")
		rec.Token = nil
	}
	if rec != nil && rec.Token != nil && rec.Token.usesDPoP() {
		c.dpopNeeded = true // renewals stay bound
	}
	c.rec = rec
	return c, nil
}

// tokenFitsConfig: a stored token is used only with the grant and the
// pre-registered client it was obtained with.
func (c *Client) tokenFitsConfig(r *record) bool {
	if r.Grant != "" && r.Grant != c.cfg.Grant.String() {
		return false
	}
	if c.cfg.ClientID != "" && r.Client != nil && r.Client.Source == "config" && r.Client.ClientID != c.cfg.ClientID {
		return false
	}
	if c.cfg.ClientID != "" && r.Client != nil && r.Client.Source != "config" {
		return false
	}
	if c.cfg.DPoP == DPoPOff && r.Token.usesDPoP() {
		return false
	}
	return true
}

// ServerURL is the canonical URL of the protected server.
func (c *Client) ServerURL() string { return c.resource }

// ---- Authorize --------------------------------------------------------------

// Authorize sets "Authorization: Bearer <token>" on req when the client has
// a token, refreshing it first when it expires within a minute (or, for the
// client-credentials and enterprise grants, obtaining a new one). It never
// starts an interactive login: a request without a usable token goes out
// without one, and the server's 401 leads to Challenge. The token is only
// ever attached to requests to the server's own origin.
func (c *Client) Authorize(ctx context.Context, req *http.Request) error {
	if !c.sameOrigin(req.URL) {
		return nil
	}
	tok := c.token()
	if tok == nil {
		return nil
	}
	if c.expiresSoon(tok) {
		nt, err := c.renew(ctx, tok)
		switch {
		case err == nil:
			tok = nt
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			c.log.Warn("could not renew the access token", "error", firstLine(err))
		}
	}
	if tok == nil || c.expired(tok) {
		return nil
	}
	if tok.usesDPoP() {
		key := c.keyOf(tok)
		if key == nil {
			return nil // unusable without its key: the 401 leads to a new one
		}
		p, err := key.proof(req.Method, req.URL, c.nonce(origin(req.URL)), tok.AccessToken, c.now().Unix())
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
		req.Header.Set("DPoP", p)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

func (c *Client) sameOrigin(u *url.URL) bool {
	if u == nil {
		return false
	}
	ru, err := url.Parse(c.resource)
	if err != nil {
		return false
	}
	cu, err := canonicalResource(u.Scheme + "://" + u.Host)
	return err == nil && cu == origin(ru)
}

func (c *Client) token() *storedToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil || c.rec.Token == nil {
		return nil
	}
	t := *c.rec.Token
	return &t
}

// expiresSoon: the token expires within refreshSkew, or within a quarter
// of its lifetime when that is shorter (so that a token issued for less
// than a minute is not renewed before every request).
func (c *Client) expiresSoon(t *storedToken) bool {
	if t.Expiry.IsZero() {
		return false
	}
	skew := refreshSkew
	if life := t.Expiry.Sub(t.ObtainedAt); !t.ObtainedAt.IsZero() && life > 0 && life < 4*refreshSkew {
		skew = life / 4
	}
	return c.now().Add(skew).After(t.Expiry)
}

func (c *Client) expired(t *storedToken) bool {
	return !t.Expiry.IsZero() && !c.now().Before(t.Expiry)
}

// renew refreshes tok, or for the non-interactive grants obtains a new
// token. It returns the new token, or nil and an error.
func (c *Client) renew(ctx context.Context, tok *storedToken) (*storedToken, error) {
	if err := c.lockFlow(ctx); err != nil {
		return nil, err
	}
	defer c.unlockFlow()
	// Someone else may have renewed it while we waited.
	if cur := c.token(); cur != nil && cur.AccessToken != tok.AccessToken && !c.expiresSoon(cur) {
		return cur, nil
	}
	as, ci := c.storedAS()
	if as == nil || ci == nil {
		return nil, errors.New("no stored authorization server for a refresh")
	}
	if tok.RefreshToken != "" {
		nt, err := c.refresh(ctx, as, ci, tok)
		if err == nil {
			return nt, nil
		}
		var ae *Error
		if errors.As(err, &ae) && (ae.OAuthError == "invalid_grant" || ae.OAuthError == "invalid_client") {
			c.dropToken()
		}
		if c.cfg.Grant == GrantAuthorizationCode {
			return nil, err
		}
	}
	if c.cfg.Grant == GrantAuthorizationCode {
		return nil, errors.New("the token expires and there is no refresh token")
	}
	c.mu.Lock()
	resource := c.rec.Resource
	scopes := c.rec.Token.Scopes
	c.mu.Unlock()
	d := &discovered{as: as, resource: resource}
	return c.obtainNonInteractive(ctx, d, ci, scopes)
}

func (c *Client) lockFlow(ctx context.Context) error {
	select {
	case c.flow <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) unlockFlow() { <-c.flow }

// storedAS is the authorization server and client of the stored token.
func (c *Client) storedAS() (*ServerMetadata, *clientInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil || c.rec.Client == nil || c.rec.TokenEndpoint == "" {
		return nil, nil
	}
	ci := *c.rec.Client
	if ci.Source == "config" {
		ci.ClientSecret = c.cfg.ClientSecret
	}
	return &ServerMetadata{Issuer: c.rec.Issuer, TokenEndpoint: c.rec.TokenEndpoint, URL: "stored"}, &ci
}

func (c *Client) dropToken() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec != nil && c.rec.Token != nil {
		c.rec.Token = nil
		if err := c.store.save(c.rec); err != nil {
			c.log.Warn("could not update the token store", "error", err)
		}
	}
}

// ---- Challenge --------------------------------------------------------------

// Challenge handles a 401 or 403 response from the server.
//
//   - 401: discovery (Protected Resource Metadata from the challenge's
//     resource_metadata or the well-known locations, then the authorization
//     server's metadata), client identity (pre-registered, Client ID
//     Metadata Document or Dynamic Client Registration) and the configured
//     grant; or just a refresh when the rejected token has a refresh token.
//   - 403 with error="insufficient_scope": step-up, requesting the
//     challenge's scopes together with those already granted.
//   - any other response, including a 403 without insufficient_scope:
//     (false, nil), the transport reports it as it is.
//
// When the rejected request carried an older token than the current one
// (another request already re-authorized), it returns (true, nil) at once.
//
// Bounded: authorizations that are each followed by another challenge
// within two minutes count as a run of failures; once a run holds
// MaxAttempts (default 3, the first one included) for one scope set, or
// twice that in all, Challenge returns ErrUnauthorized or
// ErrInsufficientScope instead of authorizing again.
//
// An interactive login waits for the browser for Config.RedirectTimeout
// rather than ctx's deadline (a per-request timeout is shorter than a
// person needs); cancelling ctx still ends it.
func (c *Client) Challenge(ctx context.Context, resp *http.Response) (bool, error) {
	if resp == nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return false, nil
	}
	ch, dpopOnly := serverChallenge(resp.Header.Values("WWW-Authenticate"))
	if retry, handled, err := c.dpopNonceChallenge(resp); handled {
		return retry, err
	}
	if dpopOnly {
		c.mu.Lock()
		c.dpopNeeded = true
		c.mu.Unlock()
	}
	stepUp := resp.StatusCode == http.StatusForbidden
	if stepUp && !strings.EqualFold(ch.Param("error"), "insufficient_scope") {
		return false, nil
	}
	if ch.Params == nil {
		ch.Params = map[string]string{}
	}
	sent := ""
	if resp.Request != nil {
		sent = bearerOf(resp.Request.Header.Get("Authorization"))
	}
	if err := c.lockFlow(ctx); err != nil {
		return false, err
	}
	defer c.unlockFlow()

	cur := c.token()
	if cur != nil && sent != cur.AccessToken && !c.expired(cur) && resp.Request != nil && c.sameOrigin(resp.Request.URL) {
		// Raced with another re-authorization: try the newer token first
		// (a bounded number of times in a row, should the request somehow
		// never carry it).
		c.mu.Lock()
		c.raced++
		n := c.raced
		c.mu.Unlock()
		if n <= racedLimit && (!stepUp || scopesCover(cur.Scopes, strings.Fields(ch.Param("scope")))) {
			return true, nil
		}
	}
	c.mu.Lock()
	c.raced = 0
	c.mu.Unlock()
	if err := c.acquire(ctx, ch, stepUp, cur, true); err != nil {
		return false, err
	}
	return true, nil
}

// bearerOf is the access token of an Authorization header, Bearer or
// DPoP.
func bearerOf(h string) string {
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	if len(h) > 5 && strings.EqualFold(h[:5], "dpop ") {
		return strings.TrimSpace(h[5:])
	}
	return ""
}

// serverChallenge is the challenge to act on: the Bearer one, else a DPoP
// one (then dpopOnly: the server takes DPoP-bound tokens only).
func serverChallenge(values []string) (ch AuthChallenge, dpopOnly bool) {
	if ch, ok := bearerChallenge(values); ok {
		return ch, false
	}
	cs, _ := ParseWWWAuthenticate(values)
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "DPoP") {
			return c, true
		}
	}
	return AuthChallenge{}, false
}

// nonceLoopLimit bounds the use_dpop_nonce answers to a request that
// already carried the nonce the server asks for.
const nonceLoopLimit = 3

// dpopNonceChallenge handles a resource server's use_dpop_nonce (RFC 9449
// section 9), in its DPoP challenge (a server may send a Bearer one
// beside it): the request is sent again with the new nonce, no new token
// needed. handled is false for any other response.
func (c *Client) dpopNonceChallenge(resp *http.Response) (retry, handled bool, err error) {
	if resp.StatusCode != http.StatusUnauthorized || resp.Request == nil || resp.Request.Header.Get("DPoP") == "" {
		// Without a proof the request had no nonce to fix: a new
		// (DPoP-bound) token is what it needs.
		return false, false, nil
	}
	asked := false
	cs, _ := ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	for _, ch := range cs {
		if strings.EqualFold(ch.Scheme, "DPoP") && strings.EqualFold(ch.Param("error"), "use_dpop_nonce") {
			asked = true
		}
	}
	n := nonceFrom(resp.Header)
	if !asked || n == "" || !c.sameOrigin(resp.Request.URL) {
		return false, false, nil
	}
	sent := proofNonce(resp.Request.Header.Get("DPoP"))
	o := origin(resp.Request.URL)
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent == n {
		c.nonceLoops++
		if c.nonceLoops > nonceLoopLimit {
			c.nonceLoops = 0
			return false, true, c.failWith(&Error{Kind: ErrDPoP, Op: "send a request with the server's DPoP nonce", URL: c.resource,
				Description: "the server kept answering use_dpop_nonce to requests that carried the nonce it had sent"})
		}
	} else {
		c.nonceLoops = 0
	}
	if len(c.nonces) >= maxNonceOrigins {
		clear(c.nonces)
	}
	c.nonces[o] = n
	return true, true, nil
}

// Observe keeps the DPoP nonce a resource server sends on a successful
// response to a request with a proof (RFC 9449 section 8.2), so the next
// request carries it instead of meeting use_dpop_nonce first.
func (c *Client) Observe(resp *http.Response) {
	if resp == nil || resp.Request == nil || resp.Request.Header.Get("DPoP") == "" || !c.sameOrigin(resp.Request.URL) {
		return
	}
	if n := nonceFrom(resp.Header); n != "" {
		c.setNonce(origin(resp.Request.URL), n)
	}
}

func scopesCover(have, want []string) bool {
	for _, w := range want {
		if !contains(have, w) {
			return false
		}
	}
	return true
}

// acquire obtains a new token for the challenge ch. With count, it is an
// attempt in the bounded sequence of Challenge.
func (c *Client) acquire(ctx context.Context, ch AuthChallenge, stepUp bool, cur *storedToken, count bool) error {
	d, err := c.discover(ctx, ch)
	if err != nil {
		return err
	}
	if c.cfg.AuthURL != "" {
		d.as.AuthorizationEndpoint = c.cfg.AuthURL
	}
	if c.cfg.TokenURL != "" {
		d.as.TokenEndpoint = c.cfg.TokenURL
	}
	c.noteIssuer(d.as.Issuer)
	scopes := c.selectScopes(ch, stepUp, cur, d)
	if count {
		if err := c.countAttempt(scopes, stepUp); err != nil {
			return err
		}
	}

	// A rejected token that can be refreshed is refreshed before anything
	// interactive (not on step-up: a refresh cannot widen the scope).
	if !stepUp && cur != nil && cur.RefreshToken != "" {
		if as, ci := c.storedAS(); as != nil && sameIssuer(as.Issuer, d.as.Issuer) {
			if _, err := c.refresh(ctx, as, ci, cur); err == nil {
				c.noteGrant()
				return nil
			} else if ctx.Err() != nil {
				return ctx.Err()
			} else {
				c.log.Debug("refresh failed; authorizing again", "error", firstLine(err))
			}
		}
	}

	switch c.cfg.Grant {
	case GrantAuthorizationCode:
		_, err = c.authorizeInteractive(ctx, d, scopes)
	case GrantJWTBearer:
		var ci *clientInfo
		ci, err = c.workloadClient(d.as)
		if err == nil {
			_, err = c.obtainNonInteractive(ctx, d, ci, scopes)
		}
	default:
		var ci *clientInfo
		ci, err = c.preRegistered(d.as)
		if err == nil {
			_, err = c.obtainNonInteractive(ctx, d, ci, scopes)
		}
	}
	if err != nil {
		return err
	}
	c.noteGrant()
	return nil
}

// noteIssuer reacts to discovery naming another authorization server than
// the one of the stored token: that token (and its refresh token) belongs
// to the old one and is dropped; client registrations stay keyed by their
// issuer, so the new one gets its own (SEP-2352).
func (c *Client) noteIssuer(issuer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil || c.rec.Issuer == "" || sameIssuer(c.rec.Issuer, issuer) {
		return
	}
	c.log.Info("the server's authorization server changed; its old token is dropped and the client registers with the new one",
		"from", c.rec.Issuer, "to", issuer)
	if c.rec.Token != nil {
		c.rec.Token = nil
		if err := c.store.save(c.rec); err != nil {
			c.log.Warn("could not update the token store", "error", err)
		}
	}
}

func (c *Client) noteGrant() {
	c.mu.Lock()
	c.lastGrant = c.now()
	c.mu.Unlock()
}

// countAttempt records one authorization for scopes and fails once
// MaxAttempts in a row have not satisfied the server.
func (c *Client) countAttempt(scopes []string, stepUp bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lastGrant.IsZero() || c.now().Sub(c.lastGrant) > attemptWindow {
		c.attempts = map[string]int{}
	}
	key := scopeKey(withoutOffline(scopes))
	// Per scope set, and in all (a server that asks for a new scope every
	// time must not get endless logins).
	if c.attempts[key] >= c.cfg.MaxAttempts || c.attempts[totalKey] >= 2*c.cfg.MaxAttempts {
		n := c.attempts[key]
		if c.attempts[key] < c.cfg.MaxAttempts {
			n = c.attempts[totalKey]
		}
		c.attempts = map[string]int{}
		c.lastGrant = time.Time{}
		if stepUp {
			return c.failWith(&Error{Kind: ErrInsufficientScope, Op: "step-up authorization",
				Description: strconv.Itoa(n) + " authorizations for scope " + strconv.Quote(key)})
		}
		return c.failWith(&Error{Kind: ErrUnauthorized, Op: "authorization",
			Description: strconv.Itoa(n) + " fresh authorizations"})
	}
	c.attempts[key]++
	c.attempts[totalKey]++
	return nil
}

// totalKey counts all authorizations in a row; scope keys never contain
// a newline.
const totalKey = "\n"

func withoutOffline(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "offline_access" {
			out = append(out, x)
		}
	}
	return out
}

// selectScopes applies the spec's scope selection: the challenge's scope
// (with the already granted scopes on step-up), else the configured
// scopes, else the PRM's scopes_supported, else none; plus offline_access
// for the authorization code grant when the authorization server lists it
// (SEP-2207).
func (c *Client) selectScopes(ch AuthChallenge, stepUp bool, cur *storedToken, d *discovered) []string {
	var s []string
	switch {
	case stepUp && cur != nil:
		// Keep what was granted; add what the server asks for now.
		s = scopeSet(cur.Scopes, strings.Fields(ch.Param("scope")))
	case strings.TrimSpace(ch.Param("scope")) != "":
		s = strings.Fields(ch.Param("scope"))
	case len(c.cfg.Scopes) > 0:
		s = c.cfg.Scopes
	case d.prm != nil:
		s = d.prm.ScopesSupported
	}
	s = withoutOffline(scopeSet(s))
	if c.cfg.Grant == GrantAuthorizationCode && d.as != nil && contains(d.as.ScopesSupported, "offline_access") {
		s = append(s, "offline_access")
	}
	return s
}

// ---- Login, Logout, Status ---------------------------------------------------

// Login authorizes now, without waiting for a 401: it probes the server
// for its challenge (an unauthenticated POST), then runs discovery and the
// configured grant, replacing any stored token. It is what
// `nexus auth login SERVER` runs.
func (c *Client) Login(ctx context.Context) error {
	ch := c.probe(ctx)
	if err := c.lockFlow(ctx); err != nil {
		return err
	}
	defer c.unlockFlow()
	return c.acquire(ctx, ch, false, nil, false)
}

// probe sends an unauthenticated initialize request to the server and
// returns the Bearer challenge of its answer (empty when there is none).
func (c *Client) probe(ctx context.Context) AuthChallenge {
	empty := AuthChallenge{Params: map[string]string{}}
	body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + protocolVersion +
		`","capabilities":{},"clientInfo":{"name":"nexus-auth-probe","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.resource, bytes.NewReader([]byte(body)))
	if err != nil {
		return empty
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		c.log.Debug("probe failed", "error", err)
		return empty
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ch, dpopOnly := serverChallenge(resp.Header.Values("WWW-Authenticate"))
	if dpopOnly {
		c.mu.Lock()
		c.dpopNeeded = true
		c.mu.Unlock()
	}
	if ch.Scheme != "" {
		if ch.Params == nil {
			ch.Params = map[string]string{}
		}
		return ch
	}
	return empty
}

// Logout forgets the server's token (and any dynamically registered
// client), deleting its file, and asks the authorization server to revoke
// the token when it has a revocation endpoint (best effort).
func (c *Client) Logout(ctx context.Context) error {
	if err := c.lockFlow(ctx); err != nil {
		return err
	}
	defer c.unlockFlow()
	c.mu.Lock()
	rec := c.rec
	c.rec = nil
	c.mu.Unlock()
	if rec != nil && rec.Token != nil {
		c.revoke(ctx, rec)
	}
	return c.store.remove(c.resource)
}

// Status describes the stored authorization of a server, without secrets.
type Status struct {
	Server       string
	ServerURL    string
	LoggedIn     bool // a token is stored
	Expired      bool
	Expiry       time.Time // zero: unknown
	CanRefresh   bool
	Scopes       []string
	Issuer       string
	ClientID     string
	ClientSource string // "config", "cimd", "dcr"
	Grant        string
	ObtainedAt   time.Time
	File         string // "" when tokens are not stored
	DPoP         bool   // the token is bound to a key of Nexus (RFC 9449)
}

// Status reports what is stored for the server.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Status{Server: c.cfg.ServerName, ServerURL: c.resource, Grant: c.cfg.Grant.String()}
	if c.store.dir != "" {
		s.File = c.store.path(c.resource)
	}
	if c.rec == nil {
		return s
	}
	s.Issuer = c.rec.Issuer
	if c.rec.Client != nil {
		s.ClientID = c.rec.Client.ClientID
		s.ClientSource = c.rec.Client.Source
	}
	if t := c.rec.Token; t != nil {
		s.LoggedIn = true
		s.Expiry = t.Expiry
		s.Expired = !t.Expiry.IsZero() && !c.now().Before(t.Expiry)
		s.CanRefresh = t.RefreshToken != ""
		s.Scopes = append([]string(nil), t.Scopes...)
		s.ObtainedAt = t.ObtainedAt
		s.DPoP = t.usesDPoP()
	}
	return s
}

// saveToken stores tok as the server's token, obtained from as for ci.
func (c *Client) saveToken(d *discovered, ci *clientInfo, tok *storedToken) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil {
		c.rec = &record{ServerURL: c.resource}
	}
	c.rec.Server = c.cfg.ServerName
	c.rec.SavedAt = c.now()
	c.rec.Grant = c.cfg.Grant.String()
	if d != nil {
		c.rec.Resource = d.resource
		if d.as != nil {
			c.rec.Issuer = d.as.Issuer
			c.rec.TokenEndpoint = d.as.TokenEndpoint
			c.rec.RevocationEndpoint = d.as.RevocationEndpoint
		}
	}
	cc := *ci
	if cc.Source != "dcr" {
		cc.ClientSecret = "" // config secrets stay in the config
	}
	c.rec.Client = &cc
	c.rec.Token = tok
	if err := c.store.save(c.rec); err != nil {
		c.log.Warn("could not save the token; it will be used in memory only", "error", err)
	}
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		// A diag report: its title is generic, the problem line says it.
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "Problem: ") {
				return strings.TrimPrefix(l, "Problem: ")
			}
		}
		return s[:i]
	}
	return s
}
