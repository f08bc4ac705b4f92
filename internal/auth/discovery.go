package auth

import (
	"context"
	"errors"
	"net/url"
	"strings"
)

// ResourceMetadata is OAuth 2.0 Protected Resource Metadata (RFC 9728).
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// DPoPBoundAccessTokensRequired: the server accepts DPoP-bound tokens
	// only (RFC 9449 section 5.2 / RFC 9728).
	DPoPBoundAccessTokensRequired bool   `json:"dpop_bound_access_tokens_required,omitempty"`
	ResourceName                  string `json:"resource_name,omitempty"`

	// URL the document was fetched from (not part of the document).
	URL string `json:"-"`
}

// ServerMetadata is OAuth 2.0 Authorization Server Metadata (RFC 8414) or
// OpenID Provider Metadata: the fields this client uses.
type ServerMetadata struct {
	Issuer                                     string   `json:"issuer"`
	AuthorizationEndpoint                      string   `json:"authorization_endpoint,omitempty"`
	TokenEndpoint                              string   `json:"token_endpoint,omitempty"`
	RegistrationEndpoint                       string   `json:"registration_endpoint,omitempty"`
	RevocationEndpoint                         string   `json:"revocation_endpoint,omitempty"`
	ScopesSupported                            []string `json:"scopes_supported,omitempty"`
	ResponseTypesSupported                     []string `json:"response_types_supported,omitempty"`
	GrantTypesSupported                        []string `json:"grant_types_supported,omitempty"`
	CodeChallengeMethodsSupported              []string `json:"code_challenge_methods_supported,omitempty"`
	TokenEndpointAuthMethodsSupported          []string `json:"token_endpoint_auth_methods_supported,omitempty"`
	TokenEndpointAuthSigningAlgValuesSupported []string `json:"token_endpoint_auth_signing_alg_values_supported,omitempty"`
	ClientIDMetadataDocumentSupported          bool     `json:"client_id_metadata_document_supported,omitempty"`
	AuthorizationResponseIssParameterSupported bool     `json:"authorization_response_iss_parameter_supported,omitempty"`
	DPoPSigningAlgValuesSupported              []string `json:"dpop_signing_alg_values_supported,omitempty"`

	// How the metadata was obtained (not part of the document).
	URL string `json:"-"` // where it was fetched; "" for the 2025-03-26 defaults
	// Legacy is set when the server has no Protected Resource Metadata and
	// the 2025-03-26 rules (metadata at the server root, then default
	// endpoints) were used.
	Legacy bool `json:"-"`
}

// discovered is the outcome of discovery for one challenge.
type discovered struct {
	prm      *ResourceMetadata // nil when the server has none (2025-03-26)
	as       *ServerMetadata
	resource string // the RFC 8707 resource to request tokens for
}

// discover finds the authorization server for the server: Protected
// Resource Metadata from the challenge's resource_metadata, else the
// path-aware then root well-known locations; then the authorization
// server's metadata. Without PRM it falls back to the 2025-03-26 rules.
func (c *Client) discover(ctx context.Context, ch AuthChallenge) (*discovered, error) {
	prm, err := c.fetchPRM(ctx, ch.Param("resource_metadata"))
	if err != nil {
		return nil, err
	}
	d := &discovered{prm: prm, resource: c.resource}
	if prm == nil {
		c.log.Debug("no protected resource metadata; using the 2025-03-26 discovery rules")
		as, err := c.legacyMetadata(ctx)
		if err != nil {
			return nil, err
		}
		d.as = as
		return d, nil
	}
	d.resource = prm.Resource
	var lastErr error
	for _, issuer := range prm.AuthorizationServers {
		as, err := c.fetchASMetadata(ctx, issuer)
		if err == nil {
			d.as = as
			return d, nil
		}
		if errors.Is(err, ErrIssuerMismatch) || errors.Is(err, ErrInsecureURL) {
			lastErr = err
			continue
		}
		lastErr = err
		c.log.Debug("authorization server metadata unavailable", "issuer", issuer, "error", err)
	}
	if c.cfg.AuthURL != "" || c.cfg.TokenURL != "" {
		// Configured endpoints stand in for metadata.
		d.as = &ServerMetadata{Issuer: first(prm.AuthorizationServers)}
		return d, nil
	}
	return nil, lastErr
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// fetchPRM returns the server's Protected Resource Metadata, nil when none
// is published at any location (a 2025-03-26 server), or an error for a
// document that is invalid or describes another resource.
func (c *Client) fetchPRM(ctx context.Context, fromHeader string) (*ResourceMetadata, error) {
	var urls []string
	if fromHeader != "" {
		// An absolute URL per RFC 9728; a relative one is resolved against
		// the server URL rather than dropped.
		if base, err := url.Parse(c.resource); err == nil {
			if ref, err := url.Parse(fromHeader); err == nil {
				fromHeader = base.ResolveReference(ref).String()
			}
		}
		urls = append(urls, fromHeader)
	}
	for _, u := range prmURLs(c.resource) {
		if u != fromHeader {
			urls = append(urls, u)
		}
	}
	for _, u := range urls {
		if err := checkSecureURL(u); err != nil {
			return nil, c.fail(ErrInsecureURL, "protected resource metadata", u, nil)
		}
		var m ResourceMetadata
		err := c.getJSON(ctx, u, &m)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.log.Debug("protected resource metadata not available", "url", u, "error", err)
			continue
		}
		m.URL = u
		if m.Resource == "" {
			c.log.Debug("protected resource metadata without resource; ignored", "url", u)
			continue
		}
		if !resourceCovers(m.Resource, c.resource) {
			return nil, c.failWith(&Error{
				Kind:        ErrResourceMismatch,
				Op:          "validate protected resource metadata",
				URL:         u,
				Description: "it names " + quoteForMessage(m.Resource) + " but the server is " + c.resource,
			})
		}
		if len(m.AuthorizationServers) == 0 {
			return nil, c.failWith(&Error{
				Kind: ErrDiscovery, Op: "find an authorization server in the protected resource metadata", URL: u,
				Err: errors.New("authorization_servers is empty"),
			})
		}
		c.log.Debug("protected resource metadata", "url", u, "authorization_servers", m.AuthorizationServers)
		return &m, nil
	}
	return nil, nil
}

func quoteForMessage(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return `"` + s + `"`
}

// fetchASMetadata tries the well-known locations of issuer in order and
// returns the first valid document.
func (c *Client) fetchASMetadata(ctx context.Context, issuer string) (*ServerMetadata, error) {
	if err := checkSecureURL(issuer); err != nil {
		return nil, c.fail(ErrInsecureURL, "authorization server", issuer, nil)
	}
	var lastErr error
	for _, u := range MetadataURLs(issuer) {
		var m ServerMetadata
		if err := c.getJSON(ctx, u, &m); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.log.Debug("authorization server metadata not available", "url", u, "error", err)
			lastErr = err
			continue
		}
		m.URL = u
		if !sameIssuer(m.Issuer, issuer) {
			return nil, c.failWith(&Error{
				Kind: ErrIssuerMismatch, Op: "validate authorization server metadata", URL: u,
				Description: "expected " + quoteForMessage(issuer) + ", got " + quoteForMessage(m.Issuer),
			})
		}
		if err := c.checkEndpoints(&m); err != nil {
			return nil, err
		}
		c.log.Debug("authorization server metadata", "url", u, "issuer", m.Issuer)
		return &m, nil
	}
	return nil, c.failWith(&Error{
		Kind: ErrDiscovery, Op: "fetch the authorization server metadata of " + issuer,
		URL: MetadataURLs(issuer)[0], Err: lastErr,
	})
}

// checkEndpoints refuses metadata whose endpoints are not HTTPS (or
// loopback http).
func (c *Client) checkEndpoints(m *ServerMetadata) error {
	for _, e := range []struct{ name, u string }{
		{"authorization endpoint", m.AuthorizationEndpoint},
		{"token endpoint", m.TokenEndpoint},
		{"registration endpoint", m.RegistrationEndpoint},
		{"revocation endpoint", m.RevocationEndpoint},
	} {
		if e.u == "" {
			continue
		}
		if err := checkSecureURL(e.u); err != nil {
			return c.fail(ErrInsecureURL, e.name, e.u, nil)
		}
	}
	return nil
}

// legacyMetadata implements the 2025-03-26 discovery for servers without
// Protected Resource Metadata: the authorization base URL is the server
// URL without its path; metadata is looked for there (RFC 8414, then
// OpenID Connect), and failing that the default endpoints /authorize,
// /token and /register are assumed.
func (c *Client) legacyMetadata(ctx context.Context) (*ServerMetadata, error) {
	u, err := url.Parse(c.resource)
	if err != nil {
		return nil, c.fail(ErrConfig, "parse server URL", c.resource, err)
	}
	base := origin(u)
	for _, mu := range MetadataURLs(base) {
		var m ServerMetadata
		if err := c.getJSON(ctx, mu, &m); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			c.log.Debug("legacy authorization server metadata not available", "url", mu, "error", err)
			continue
		}
		if m.AuthorizationEndpoint == "" && m.TokenEndpoint == "" {
			continue
		}
		if err := c.checkEndpoints(&m); err != nil {
			return nil, err
		}
		m.URL = mu
		m.Legacy = true
		if m.Issuer == "" {
			m.Issuer = base
		}
		return &m, nil
	}
	c.log.Debug("no authorization server metadata; using the default endpoints", "base", base)
	return &ServerMetadata{
		Issuer:                base,
		AuthorizationEndpoint: base + "/authorize",
		TokenEndpoint:         base + "/token",
		RegistrationEndpoint:  base + "/register",
		Legacy:                true,
	}, nil
}

// supportsAuthMethod reports whether the AS accepts method at its token
// endpoint; RFC 8414's default, when the list is absent, is
// client_secret_basic.
func (m *ServerMetadata) supportsAuthMethod(method string) bool {
	if len(m.TokenEndpointAuthMethodsSupported) == 0 {
		return method == authBasic
	}
	return contains(m.TokenEndpointAuthMethodsSupported, method)
}

// checkPKCE enforces PKCE support for the authorization code grant: a
// metadata document must list S256; with no metadata at all (2025-03-26
// default endpoints) S256 is used regardless.
func (c *Client) checkPKCE(m *ServerMetadata) error {
	if m.URL == "" {
		return nil
	}
	if contains(m.CodeChallengeMethodsSupported, "S256") {
		return nil
	}
	desc := strings.Join(m.CodeChallengeMethodsSupported, ", ")
	return c.failWith(&Error{Kind: ErrNoPKCE, Op: "check PKCE support", URL: m.URL, Description: desc})
}
