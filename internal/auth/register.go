package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// clientFor picks the client identity for the authorization code grant at
// as, in the spec's priority order: the pre-registered client of the
// config; a Client ID Metadata Document when one is configured and the
// authorization server advertises client_id_metadata_document_supported;
// Dynamic Client Registration (RFC 7591) when it has a registration
// endpoint, reusing an earlier registration for the same issuer and
// redirect URI.
func (c *Client) clientFor(ctx context.Context, as *ServerMetadata, redirectURI string) (*clientInfo, error) {
	if c.cfg.ClientID != "" {
		ci, err := c.preRegistered(as)
		if err != nil {
			return nil, err
		}
		ci.RedirectURI = redirectURI
		return ci, nil
	}
	if c.cfg.ClientMetadataURL != "" && as.ClientIDMetadataDocumentSupported {
		method := authNone
		if c.signer != nil && as.supportsAuthMethod(authPrivateKeyJWT) {
			method = authPrivateKeyJWT
		}
		c.log.Debug("using the client ID metadata document", "client_id", c.cfg.ClientMetadataURL)
		return &clientInfo{ClientID: c.cfg.ClientMetadataURL, AuthMethod: method, RedirectURI: redirectURI, Source: "cimd", Issuer: as.Issuer}, nil
	}
	if as.RegistrationEndpoint == "" {
		return nil, c.failWith(&Error{Kind: ErrNoClientIdentity, Op: "identify the client", URL: orDefault(as.URL, as.Issuer)})
	}
	if ci := c.registration(as.Issuer, redirectURI); ci != nil {
		c.log.Debug("reusing the dynamically registered client", "issuer", as.Issuer)
		return ci, nil
	}
	return c.register(ctx, as, redirectURI)
}

// registration returns a stored dynamic registration that is still usable.
func (c *Client) registration(issuer, redirectURI string) *clientInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil || c.rec.Registrations == nil {
		return nil
	}
	ci := c.rec.Registrations[issuer]
	if ci == nil || ci.RedirectURI != redirectURI {
		return nil
	}
	if !ci.SecretExpiresAt.IsZero() && !c.now().Add(time.Minute).Before(ci.SecretExpiresAt) {
		return nil
	}
	cc := *ci
	return &cc
}

// registeredRedirect is the redirect URI of a stored registration with
// issuer, so the listener can try to get the same port back.
func (c *Client) registeredRedirect(issuer string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec == nil || c.rec.Registrations == nil || c.rec.Registrations[issuer] == nil {
		return ""
	}
	return c.rec.Registrations[issuer].RedirectURI
}

// forgetRegistration drops the stored registration with issuer (after the
// authorization server stopped accepting it).
func (c *Client) forgetRegistration(issuer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec != nil && c.rec.Registrations != nil {
		delete(c.rec.Registrations, issuer)
		if err := c.store.save(c.rec); err != nil {
			c.log.Warn("could not update the token store", "error", err)
		}
	}
}

// registrationRequest is the RFC 7591 client metadata sent.
type registrationRequest struct {
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	ApplicationType         string   `json:"application_type,omitempty"`
	SoftwareID              string   `json:"software_id,omitempty"`
}

type registrationResponse struct {
	ClientID                string `json:"client_id"`
	ClientSecret            string `json:"client_secret"`
	ClientSecretExpiresAt   int64  `json:"client_secret_expires_at"`
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// applicationType is the OpenID Connect application_type a registration
// must state (SEP-837): "native" for a redirect URI on a loopback host or
// with a private-use scheme (an application on the user's machine), "web"
// for one on a remote host. Omitted, OIDC servers assume "web" and may
// refuse loopback redirect URIs. Nexus receives the code on a loopback
// listener, so its registrations are native; the rule is kept whole for a
// redirect URI supplied from elsewhere.
func applicationType(redirectURI string) string {
	u, err := url.Parse(redirectURI)
	if err != nil {
		return "native"
	}
	if (u.Scheme == "http" || u.Scheme == "https") && !isLoopbackHost(u.Hostname()) {
		return "web"
	}
	return "native"
}

// register runs Dynamic Client Registration and stores the result. The
// client registers as a public native client ("none") when the
// authorization server allows it, else for a secret; it asks for the
// refresh_token grant (SEP-2207).
func (c *Client) register(ctx context.Context, as *ServerMetadata, redirectURI string) (*clientInfo, error) {
	if err := checkSecureURL(as.RegistrationEndpoint); err != nil {
		return nil, c.fail(ErrInsecureURL, "registration endpoint", as.RegistrationEndpoint, nil)
	}
	method := authNone
	switch {
	case len(as.TokenEndpointAuthMethodsSupported) == 0 || contains(as.TokenEndpointAuthMethodsSupported, authNone):
	case contains(as.TokenEndpointAuthMethodsSupported, authBasic):
		method = authBasic
	case contains(as.TokenEndpointAuthMethodsSupported, authPost):
		method = authPost
	}
	name := c.cfg.ClientName
	if c.cfg.ServerName != "" && name == defaultClientName {
		name += " (" + c.cfg.ServerName + ")"
	}
	req := registrationRequest{
		ClientName:              name,
		RedirectURIs:            []string{redirectURI},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: method,
		ApplicationType:         applicationType(redirectURI),
		SoftwareID:              "nexus",
	}
	var resp registrationResponse
	err := c.postJSON(ctx, as.RegistrationEndpoint, req, &resp)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		e := &Error{Kind: ErrRegistration, Op: "dynamic client registration", URL: as.RegistrationEndpoint}
		var he *httpError
		if errors.As(err, &he) {
			e.Status = he.Status
			var ob oauthErrorBody
			if json.Unmarshal(he.Body, &ob) == nil && ob.Error != "" {
				e.OAuthError = sanitize.ForDisplayLimit(ob.Error, 100)
				e.Description = sanitize.ForDisplayLimit(ob.Description, 300)
			} else {
				e.Body = excerpt(he.Body)
			}
		} else {
			e.Err = err
		}
		return nil, c.failWith(e)
	}
	if strings.TrimSpace(resp.ClientID) == "" {
		return nil, c.failWith(&Error{Kind: ErrRegistration, Op: "dynamic client registration", URL: as.RegistrationEndpoint,
			Err: errors.New("the response has no client_id")})
	}
	ci := &clientInfo{
		ClientID:     resp.ClientID,
		ClientSecret: resp.ClientSecret,
		AuthMethod:   resp.TokenEndpointAuthMethod,
		RedirectURI:  redirectURI,
		Source:       "dcr",
		Issuer:       as.Issuer,
	}
	if ci.AuthMethod == "" {
		// RFC 7591: the response carries the registered metadata; absent,
		// the default applies: client_secret_basic for a client with a
		// secret (or post, where that is all the AS takes).
		switch {
		case ci.ClientSecret == "":
			ci.AuthMethod = authNone
		case !as.supportsAuthMethod(authBasic) && as.supportsAuthMethod(authPost):
			ci.AuthMethod = authPost
		default:
			ci.AuthMethod = authBasic
		}
	}
	if resp.ClientSecretExpiresAt > 0 {
		ci.SecretExpiresAt = time.Unix(resp.ClientSecretExpiresAt, 0)
	}
	c.log.Debug("registered a client dynamically", "issuer", as.Issuer, "auth_method", ci.AuthMethod)
	c.mu.Lock()
	if c.rec == nil {
		c.rec = &record{ServerURL: c.resource}
	}
	if c.rec.Registrations == nil {
		c.rec.Registrations = map[string]*clientInfo{}
	}
	cc := *ci
	c.rec.Registrations[as.Issuer] = &cc
	if err := c.store.save(c.rec); err != nil {
		c.log.Warn("could not save the client registration", "error", err)
	}
	c.mu.Unlock()
	return ci, nil
}
