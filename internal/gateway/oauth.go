package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/gateway/internal/resource"
	"github.com/nexus-mcp/nexus/internal/transport/httpserver"
)

// OAuth makes the gateway an OAuth 2.1 resource server as the gateway
// block's oauth says: it sets o's Verifier (JWT access tokens mapped to
// agents), the 401 challenge pointing at the Protected Resource Metadata
// (RFC 9728), and serves that metadata. publicURL is the MCP endpoint's
// URL as clients reach it (gateway { public_url }). The issuer's metadata
// and keys are fetched through the same SSRF guard as every OAuth call.
func OAuth(g *config.Gateway, publicURL string, o *HTTPOptions) error {
	if g == nil || g.OAuth == nil {
		return nil
	}
	if publicURL == "" {
		return errors.New("the gateway's oauth block needs gateway { public_url = \"https://...\" }: access tokens must name the gateway's URL as their audience")
	}
	oc := g.OAuth
	v, err := resource.New(resource.Config{
		Resource: publicURL, Issuer: oc.Issuer, JWKSURL: oc.JWKSURL, Audience: oc.Audience, Scopes: oc.Scopes,
		AgentClaim: oc.AgentClaim, Agents: oc.Agents, HTTPClient: auth.NewHTTPClient(false),
	})
	if err != nil {
		return err
	}
	meta := resource.MetadataURL(publicURL)
	u, err := url.Parse(meta)
	if err != nil {
		return fmt.Errorf("public_url %q: %v", publicURL, err)
	}
	o.Verifier = verifier{v, meta}
	o.Challenge = `Bearer resource_metadata="` + meta + `"`
	o.Metadata, o.MetadataPath = v.MetadataHandler(), u.Path
	return nil
}

// verifier turns the validator's refusals into HTTP ones with the
// challenge RFC 6750 and RFC 9728 ask for. A token that could not be
// judged at all (the issuer's keys cannot be fetched) is 503: the client's
// token may be fine, and a 401 would send it to get a new one for nothing.
type verifier struct {
	v    *resource.Validator
	meta string
}

func (x verifier) Agent(ctx context.Context, token string) (string, error) {
	a, err := x.v.Agent(ctx, token)
	var e *resource.Error
	if errors.As(err, &e) {
		return "", &httpserver.AuthError{Status: e.Status, Header: http.Header{"Www-Authenticate": {e.WWWAuthenticate(x.meta)}}, Message: e.Description}
	}
	if err != nil {
		return "", &httpserver.AuthError{Status: http.StatusServiceUnavailable, Header: http.Header{"Retry-After": {"5"}}, Message: err.Error()}
	}
	return a, nil
}
