package gateway

import (
	"context"
	"errors"
	"net/url"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway/internal/resource"
)

// Login is the gateway's OAuth issuer (the gateway block's oauth, the one
// agents' access tokens come from) as the console's OpenID Connect login
// uses it: a person is sent to the issuer, and the ID token that comes
// back is checked with the same keys, algorithms and clock as an agent's
// access token.
type Login struct {
	v *resource.Validator
}

// NewLogin makes the login of the gateway block's oauth issuer; publicURL
// is the gateway's (gateway { public_url }).
func NewLogin(g *config.Gateway, publicURL string) (*Login, error) {
	if g == nil || g.OAuth == nil {
		return nil, errors.New("the console's OpenID Connect login uses the gateway's OAuth issuer, and the gateway block has no oauth: add gateway { oauth { issuer = \"https://...\" } }, or log in with tokens")
	}
	oc := g.OAuth
	v, err := resource.New(resource.Config{
		Resource: publicURL, Issuer: oc.Issuer, JWKSURL: oc.JWKSURL, Audience: oc.Audience, Scopes: oc.Scopes,
		AgentClaim: oc.AgentClaim, Agents: oc.Agents, HTTPClient: auth.NewHTTPClient(false),
	})
	if err != nil {
		return nil, err
	}
	return &Login{v: v}, nil
}

// Issuer is the issuer people log in at.
func (l *Login) Issuer() string { return l.v.Issuer() }

// AuthURL is where a person is sent to log in: the issuer's authorization
// endpoint, asking for an ID token (scope openid) for clientID, with the
// login's state, nonce and PKCE challenge (S256).
func (l *Login) AuthURL(ctx context.Context, clientID, redirectURI, state, nonce, challenge string) (string, error) {
	e, err := l.v.Endpoints(ctx)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(e.Authorization)
	if err != nil {
		return "", err
	}
	q := u.Query()
	for k, v := range map[string]string{"response_type": "code", "client_id": clientID, "redirect_uri": redirectURI, "scope": "openid",
		"state": state, "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256"} {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Redeem trades the login's code for the person's ID token, checked, and
// returns its claims.
func (l *Login) Redeem(ctx context.Context, clientID, secret, redirectURI, code, verifier, nonce string) (map[string]any, error) {
	e, err := l.v.Endpoints(ctx)
	if err != nil {
		return nil, err
	}
	return l.v.Redeem(ctx, e, clientID, secret, redirectURI, code, verifier, nonce)
}
