package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// Token endpoint client authentication methods (RFC 8414 / OIDC names).
const (
	authBasic         = "client_secret_basic"
	authPost          = "client_secret_post"
	authNone          = "none"
	authPrivateKeyJWT = "private_key_jwt"
)

// Grant types and token types of the extensions.
const (
	grantTokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
	grantJWTBearer     = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	tokenTypeIDToken   = "urn:ietf:params:oauth:token-type:id_token"
	tokenTypeIDJAG     = "urn:ietf:params:oauth:token-type:id-jag"
	assertionTypeJWT   = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// chooseAuthMethod picks the token endpoint authentication for a
// pre-registered client from what the authorization server supports:
// private_key_jwt when a key is configured and accepted, else the secret by
// client_secret_basic or client_secret_post, else none (a public client).
func (c *Client) chooseAuthMethod(as *ServerMetadata, hasSecret bool) string {
	hasKey := c.signer != nil
	switch {
	case hasKey && (as.supportsAuthMethod(authPrivateKeyJWT) || !hasSecret):
		return authPrivateKeyJWT
	case hasSecret && as.supportsAuthMethod(authBasic):
		return authBasic
	case hasSecret && as.supportsAuthMethod(authPost):
		return authPost
	case hasSecret:
		return authBasic
	}
	return authNone
}

// preRegistered is the configured client, for the grants that need one.
// It is bound to one authorization server (SEP-2352): the configured
// issuer, else the one it was first used with; another is an error.
func (c *Client) preRegistered(as *ServerMetadata) (*clientInfo, error) {
	if c.cfg.ClientID == "" {
		return nil, c.failWith(&Error{Kind: ErrNoClientIdentity, Op: "identify the client", URL: as.URL})
	}
	bound, from := c.cfg.Issuer, "the configured issuer"
	if bound == "" {
		c.mu.Lock()
		if r := c.rec; r != nil && r.Client != nil && r.Client.Source == "config" && r.Client.ClientID == c.cfg.ClientID {
			bound, from = r.Client.Issuer, "the authorization server it was first used with"
		}
		c.mu.Unlock()
	}
	if bound != "" && as.Issuer != "" && !sameIssuer(bound, as.Issuer) {
		return nil, c.failWith(&Error{Kind: ErrIssuerChanged, Op: "identify the client", URL: orDefault(as.URL, as.Issuer),
			Description: "client_id " + quoteForMessage(c.cfg.ClientID) + " belongs to " + quoteForMessage(bound) + " (" + from + "), the server now names " + quoteForMessage(as.Issuer)})
	}
	return &clientInfo{
		ClientID:     c.cfg.ClientID,
		ClientSecret: c.cfg.ClientSecret,
		AuthMethod:   c.chooseAuthMethod(as, c.cfg.ClientSecret != ""),
		Source:       "config",
		Issuer:       as.Issuer,
	}, nil
}

// clientAuth is how a token request authenticates ci: the x/oauth2 auth
// style, the secret to send and any extra parameters (a client assertion).
func (c *Client) clientAuth(as *ServerMetadata, ci *clientInfo) (oauth2.AuthStyle, string, url.Values, error) {
	// The one gate every token, revocation and exchange request passes:
	// a client's credentials go only to the authorization server that
	// issued them (SEP-2352).
	if ci.Issuer != "" && as.Issuer != "" && !sameIssuer(ci.Issuer, as.Issuer) {
		return 0, "", nil, errors.New("the client " + quoteForMessage(ci.ClientID) + " belongs to the authorization server " +
			quoteForMessage(ci.Issuer) + ", not " + quoteForMessage(as.Issuer) + "; its credentials are not sent there")
	}
	switch ci.AuthMethod {
	case authBasic, "":
		if ci.ClientSecret == "" {
			return oauth2.AuthStyleInParams, "", nil, nil
		}
		return oauth2.AuthStyleInHeader, ci.ClientSecret, nil, nil
	case authPost:
		return oauth2.AuthStyleInParams, ci.ClientSecret, nil, nil
	case authPrivateKeyJWT:
		if c.signer == nil {
			return 0, "", nil, errors.New("the client is registered for private_key_jwt but no private key is configured")
		}
		aud := []string{}
		if as.Issuer != "" {
			aud = append(aud, as.Issuer)
		}
		if as.TokenEndpoint != "" && as.TokenEndpoint != as.Issuer {
			aud = append(aud, as.TokenEndpoint)
		}
		jwt, err := c.signer.clientAssertion(ci.ClientID, aud, c.now())
		if err != nil {
			return 0, "", nil, err
		}
		return oauth2.AuthStyleInParams, "", url.Values{
			"client_assertion_type": {assertionTypeJWT},
			"client_assertion":      {jwt},
		}, nil
	default: // none, or a method this client does not know: public client
		return oauth2.AuthStyleInParams, "", nil, nil
	}
}

// tokenRequest POSTs params to the token endpoint of as, authenticated as
// ci. It is the one path for refresh, client credentials, JWT bearer and
// (with another endpoint) token exchange: x/oauth2's client-credentials
// config sends any grant when grant_type is given in its parameters.
// With key, each attempt carries a DPoP proof, and a use_dpop_nonce answer
// is retried once with the server's nonce (and a fresh client assertion).
func (c *Client) tokenRequest(ctx context.Context, op, tokenURL string, ci *clientInfo, as *ServerMetadata, params url.Values, key *dpopKey) (*oauth2.Token, error) {
	if tokenURL == "" {
		return nil, c.failWith(&Error{Kind: ErrDiscovery, Op: "find the token endpoint", URL: as.URL,
			Err: errors.New("the authorization server metadata has no token_endpoint")})
	}
	if err := checkSecureURL(tokenURL); err != nil {
		return nil, c.fail(ErrInsecureURL, "token endpoint", tokenURL, nil)
	}
	var authErr error
	tok, err := withNonceRetry(key, func() (*oauth2.Token, error) {
		style, secret, extra, err := c.clientAuth(as, ci)
		if err != nil {
			authErr = err
			return nil, err
		}
		p := url.Values{}
		for k, v := range params {
			p[k] = v
		}
		for k, v := range extra {
			p[k] = v
		}
		cc := clientcredentials.Config{
			ClientID:       ci.ClientID,
			ClientSecret:   secret,
			TokenURL:       tokenURL,
			AuthStyle:      style,
			EndpointParams: p,
		}
		return cc.Token(c.tokenCtx(ctx, key))
	})
	if authErr != nil {
		return nil, c.failWith(&Error{Kind: ErrTokenEndpoint, Op: op, URL: tokenURL, Err: authErr})
	}
	if err != nil {
		return nil, c.tokenError(ctx, op, tokenURL, err)
	}
	return tok, nil
}

// tokenError turns an x/oauth2 failure into a report with the status, the
// OAuth error and a sanitized excerpt of the body.
func (c *Client) tokenError(ctx context.Context, op, tokenURL string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	e := &Error{Kind: ErrTokenEndpoint, Op: op, URL: tokenURL}
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.Response != nil {
			e.Status = re.Response.StatusCode
		}
		e.OAuthError = sanitize.ForDisplayLimit(re.ErrorCode, 100)
		e.Description = sanitize.ForDisplayLimit(re.ErrorDescription, 300)
		if e.OAuthError == "" {
			e.Body = excerpt(re.Body)
		}
	} else {
		e.Err = errors.New(sanitize.ForDisplayLimit(err.Error(), 300))
	}
	return c.failWith(e)
}

// toStored converts a token response, recording the granted scopes (the
// requested ones when the response does not say).
func (c *Client) toStored(tok *oauth2.Token, requested []string) *storedToken {
	st := &storedToken{
		AccessToken:  tok.AccessToken,
		TokenType:    tok.TokenType,
		RefreshToken: tok.RefreshToken,
		Expiry:       tok.Expiry,
		Scopes:       requested,
		ObtainedAt:   c.now(),
	}
	if s, ok := tok.Extra("scope").(string); ok && strings.TrimSpace(s) != "" {
		st.Scopes = strings.Fields(s)
	}
	return st
}

// refresh exchanges tok's refresh token (with the RFC 8707 resource) and
// stores the result.
func (c *Client) refresh(ctx context.Context, as *ServerMetadata, ci *clientInfo, tok *storedToken) (*storedToken, error) {
	c.mu.Lock()
	resource := c.resource
	if c.rec != nil && c.rec.Resource != "" {
		resource = c.rec.Resource
	}
	c.mu.Unlock()
	params := url.Values{
		"grant_type":    {"refresh_token"},
		"refresh_token": {tok.RefreshToken},
		"resource":      {resource},
	}
	// A DPoP token's refresh token is bound to the same key (RFC 9449
	// section 5): it goes with a proof of that key, and so does the
	// token it returns.
	key := c.keyOf(tok)
	nt, err := c.tokenRequest(ctx, "token refresh", as.TokenEndpoint, ci, as, params, key)
	if err != nil {
		return nil, err
	}
	st := c.toStored(nt, tok.Scopes)
	if err := bind(st, key); err != nil {
		return nil, c.failWith(&Error{Kind: ErrDPoP, Op: "token refresh", Err: err})
	}
	c.log.Debug("access token refreshed", "expires", st.Expiry)
	c.saveToken(&discovered{as: as, resource: resource}, ci, st)
	return st, nil
}

// obtainNonInteractive runs the client-credentials grant or the
// enterprise flow.
func (c *Client) obtainNonInteractive(ctx context.Context, d *discovered, ci *clientInfo, scopes []string) (*storedToken, error) {
	key, err := c.dpopFor(d)
	if err != nil {
		return nil, err
	}
	var tok *oauth2.Token
	switch c.cfg.Grant {
	case GrantClientCredentials:
		params := url.Values{"grant_type": {"client_credentials"}, "resource": {d.resource}}
		if len(scopes) > 0 {
			params.Set("scope", strings.Join(scopes, " "))
		}
		tok, err = c.tokenRequest(ctx, "client-credentials grant", d.as.TokenEndpoint, ci, d.as, params, key)
	case GrantEnterprise:
		var jag string
		jag, err = c.idJAG(ctx, d, scopes)
		if err != nil {
			return nil, err
		}
		params := url.Values{"grant_type": {grantJWTBearer}, "assertion": {jag}, "resource": {d.resource}}
		if len(scopes) > 0 {
			params.Set("scope", strings.Join(scopes, " "))
		}
		tok, err = c.tokenRequest(ctx, "JWT bearer grant", d.as.TokenEndpoint, ci, d.as, params, key)
	case GrantJWTBearer:
		var assertion string
		assertion, err = c.workloadAssertion(ctx)
		if err != nil {
			return nil, err
		}
		params := url.Values{"grant_type": {grantJWTBearer}, "assertion": {assertion}, "resource": {d.resource}}
		if len(scopes) > 0 {
			params.Set("scope", strings.Join(scopes, " "))
		}
		tok, err = c.tokenRequest(ctx, OpWorkloadGrant, d.as.TokenEndpoint, ci, d.as, params, key)
	default:
		return nil, errors.New("not a non-interactive grant")
	}
	if err != nil {
		return nil, err
	}
	st := c.toStored(tok, scopes)
	if err := bind(st, key); err != nil {
		return nil, c.failWith(&Error{Kind: ErrDPoP, Op: c.cfg.Grant.String() + " grant", Err: err})
	}
	c.log.Debug("access token obtained", "grant", c.cfg.Grant.String(), "expires", st.Expiry, "dpop", st.usesDPoP())
	c.saveToken(d, ci, st)
	return st, nil
}

// workloadClient is the client of the JWT bearer grant: the configured
// one, or none at all (the assertion alone identifies the workload).
func (c *Client) workloadClient(as *ServerMetadata) (*clientInfo, error) {
	if c.cfg.ClientID != "" {
		return c.preRegistered(as)
	}
	return &clientInfo{AuthMethod: authNone, Source: "config", Issuer: as.Issuer}, nil
}

// OpWorkloadGrant names the workload identity grant in errors.
const OpWorkloadGrant = "workload identity (JWT bearer) grant"

// maxAssertion bounds a workload JWT read from a file.
const maxAssertion = 64 << 10

// workloadAssertion is the workload's JWT, fetched afresh for each grant.
func (c *Client) workloadAssertion(ctx context.Context) (string, error) {
	var (
		s    string
		err  error
		what = "the workload JWT (assertion)"
	)
	switch {
	case c.cfg.AssertionFunc != nil:
		s, err = c.cfg.AssertionFunc(ctx)
	case c.cfg.AssertionFile != "":
		what = "the workload JWT file " + c.cfg.AssertionFile + " (assertion_file)"
		var b []byte
		b, err = readFileLimited(c.cfg.AssertionFile, maxAssertion)
		s = string(b)
	default:
		s = c.cfg.Assertion
	}
	s = strings.TrimSpace(s)
	if err == nil && strings.Count(s, ".") != 2 {
		err = errors.New("it is not a JWT (three dot-separated parts)")
	}
	if err != nil {
		return "", c.failWith(&Error{Kind: ErrConfig, Op: "read " + what, Err: err})
	}
	return s, nil
}

// idJAG exchanges the user's ID token at the enterprise IdP for an
// Identity Assertion JWT Authorization Grant (RFC 8693 token exchange) for
// the MCP authorization server and resource.
func (c *Client) idJAG(ctx context.Context, d *discovered, scopes []string) (string, error) {
	e := c.cfg.Enterprise
	subject := e.IDToken
	if e.IDTokenFunc != nil {
		t, err := e.IDTokenFunc(ctx)
		if err != nil {
			return "", c.failWith(&Error{Kind: ErrTokenEndpoint, Op: "get the ID token for the token exchange", Err: err})
		}
		subject = t
	}
	tokenURL := e.IdPTokenURL
	idp := &ServerMetadata{Issuer: e.IdPIssuer, TokenEndpoint: tokenURL}
	if tokenURL == "" {
		m, err := c.fetchASMetadata(ctx, e.IdPIssuer)
		if err != nil {
			return "", err
		}
		idp = m
		tokenURL = m.TokenEndpoint
	}
	subjectType := e.SubjectTokenType
	if subjectType == "" {
		subjectType = tokenTypeIDToken
	}
	params := url.Values{
		"grant_type":           {grantTokenExchange},
		"requested_token_type": {tokenTypeIDJAG},
		"audience":             {d.as.Issuer},
		"resource":             {d.resource},
		"subject_token":        {subject},
		"subject_token_type":   {subjectType},
	}
	if len(scopes) > 0 {
		params.Set("scope", strings.Join(scopes, " "))
	}
	ci := &clientInfo{ClientID: e.IdPClientID, ClientSecret: e.IdPClientSecret, AuthMethod: authNone}
	if e.IdPClientSecret != "" {
		ci.AuthMethod = authBasic
	}
	tok, err := c.tokenRequest(ctx, "token exchange at the enterprise IdP", tokenURL, ci, idp, params, nil)
	if err != nil {
		return "", err
	}
	if tt, _ := tok.Extra("issued_token_type").(string); tt != "" && tt != tokenTypeIDJAG {
		return "", c.failWith(&Error{Kind: ErrTokenEndpoint, Op: "token exchange at the enterprise IdP", URL: tokenURL,
			Err: errors.New("the IdP issued a " + sanitize.ForDisplayLimit(tt, 100) + " instead of an ID-JAG")})
	}
	return tok.AccessToken, nil
}

// revoke asks the authorization server to revoke the stored token (RFC
// 7009), refresh token first. Failures are logged, never returned: logout
// must work offline.
func (c *Client) revoke(ctx context.Context, rec *record) {
	if rec.RevocationEndpoint == "" || rec.Client == nil || rec.Token == nil || checkSecureURL(rec.RevocationEndpoint) != nil {
		return
	}
	ci := *rec.Client
	if ci.Source == "config" {
		ci.ClientSecret = c.cfg.ClientSecret
	}
	as := &ServerMetadata{Issuer: rec.Issuer, TokenEndpoint: rec.TokenEndpoint}
	tok, hint := rec.Token.RefreshToken, "refresh_token"
	if tok == "" {
		tok, hint = rec.Token.AccessToken, "access_token"
	}
	style, secret, extra, err := c.clientAuth(as, &ci)
	if err != nil {
		return
	}
	form := url.Values{"token": {tok}, "token_type_hint": {hint}}
	for k, v := range extra {
		form[k] = v
	}
	if style == oauth2.AuthStyleInParams {
		form.Set("client_id", ci.ClientID)
		if secret != "" {
			form.Set("client_secret", secret)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.RevocationEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if style == oauth2.AuthStyleInHeader {
		req.SetBasicAuth(url.QueryEscape(ci.ClientID), url.QueryEscape(secret))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.log.Debug("token revocation failed", "error", err)
		return
	}
	resp.Body.Close()
	c.log.Debug("token revocation", "status", resp.StatusCode)
}

// readFileLimited reads a file of at most limit bytes.
func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("the file is larger than %d bytes", limit)
	}
	return b, nil
}
