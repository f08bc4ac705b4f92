package auth

import (
	"errors"
	"fmt"

	"github.com/nexus-mcp/nexus/internal/option"
)

// Options are the OAuth client settings a config gives an HTTP server: its
// oauth block in nexus.hcl, its "oauth" member in JSON. OptionTable decodes
// and writes them; Apply puts them into a Config. Empty endpoints are
// discovered from the server's metadata.
type Options struct {
	ClientID     string
	ClientSecret string
	// Issuer binds the pre-registered client to its authorization server.
	Issuer      string
	Scopes      []string
	RedirectURI string
	AuthURL     string
	TokenURL    string

	// Grant is how tokens are obtained: "authorization_code" (the default,
	// a person logs in through a browser), "client_credentials" (machine to
	// machine, with ClientSecret or PrivateKey) or "enterprise"
	// (enterprise-managed authorization: IDToken from the IdP login is
	// exchanged at the IdP, then at the server's authorization server) or
	// "jwt_bearer" (workload identity: the workload's own JWT, Assertion
	// or AssertionFile, is the grant).
	Grant string
	// ClientMetadataURL is the client's Client ID Metadata Document (an
	// https URL), used as client_id where the authorization server
	// supports them.
	ClientMetadataURL string
	// PrivateKey (PEM) makes the client authenticate with private_key_jwt;
	// SigningAlg (default from the key) and KeyID go into the assertion.
	PrivateKey string
	SigningAlg string
	KeyID      string
	// Enterprise-managed authorization: the ID token of the user's IdP
	// login, and the IdP's token endpoint (or issuer, to discover it) and
	// this client's registration there.
	IDToken         string
	IdPTokenURL     string
	IdPIssuer       string
	IdPClientID     string
	IdPClientSecret string
	// Workload identity (grant "jwt_bearer"): the workload's JWT, or the
	// file the platform keeps it in.
	Assertion     string
	AssertionFile string

	// DPoP is "auto" (the default: when the server requires it), "on" or
	// "off": whether tokens are bound to a key of Nexus (RFC 9449).
	DPoP string
}

// Grants are the values of Options.Grant: the names of the Grants.
var Grants = []string{GrantAuthorizationCode.String(), GrantClientCredentials.String(), GrantEnterprise.String(), GrantJWTBearer.String()}

// OptionTable is every option of Options. Values that may be secrets (the
// client secret, the private key, tokens) and the client id may come from
// the environment (templates); the rest are plain text. To add one: a field above, a
// row here, its use in Apply.
var OptionTable = option.Table[Options]{
	option.Text("client_id", "/oauth/client_id", true, func(o *Options) *string { return &o.ClientID }, `"nexus"`),
	option.Text("client_secret", "/oauth/client_secret", true, func(o *Options) *string { return &o.ClientSecret }, `"s3cret"`),
	option.Text("issuer", "/oauth/issuer", false, func(o *Options) *string { return &o.Issuer }, `"https://as.example.com"`),
	{HCL: "scopes", JSON: "scopes", Example: `["repo", "read:org"]`,
		Decode: func(o *Options, v option.Value) { o.Scopes, _ = v.Strings("") },
		Out: func(o *Options, _ option.Writer) any {
			if len(o.Scopes) == 0 {
				return nil
			}
			return o.Scopes
		}},
	option.Text("redirect_uri", "/oauth/redirect_uri", false, func(o *Options) *string { return &o.RedirectURI }, `"http://127.0.0.1:8976/callback"`),
	option.Text("auth_url", "/oauth/auth_url", false, func(o *Options) *string { return &o.AuthURL }, `"https://as.example.com/authorize"`),
	option.Text("token_url", "/oauth/token_url", false, func(o *Options) *string { return &o.TokenURL }, `"https://as.example.com/token"`),
	{HCL: "grant", JSON: "grant", Example: `"client_credentials"`,
		Decode: func(o *Options, v option.Value) { o.Grant, _ = v.Choice(Grants) },
		Out: func(o *Options, _ option.Writer) any {
			if o.Grant == "" {
				return nil
			}
			return o.Grant
		}},
	option.Text("client_metadata_url", "/oauth/client_metadata_url", false, func(o *Options) *string { return &o.ClientMetadataURL }, `"https://nexus.example.com/client.json"`),
	option.Text("private_key", "/oauth/private_key", true, func(o *Options) *string { return &o.PrivateKey }, `"-----BEGIN PRIVATE KEY-----"`),
	option.Text("signing_alg", "/oauth/signing_alg", false, func(o *Options) *string { return &o.SigningAlg }, `"ES256"`),
	option.Text("key_id", "/oauth/key_id", false, func(o *Options) *string { return &o.KeyID }, `"k1"`),
	option.Text("id_token", "/oauth/id_token", true, func(o *Options) *string { return &o.IDToken }, `"id-token"`),
	option.Text("idp_token_url", "/oauth/idp_token_url", false, func(o *Options) *string { return &o.IdPTokenURL }, `"https://idp.example.com/token"`),
	option.Text("idp_issuer", "/oauth/idp_issuer", false, func(o *Options) *string { return &o.IdPIssuer }, `"https://idp.example.com"`),
	option.Text("idp_client_id", "/oauth/idp_client_id", false, func(o *Options) *string { return &o.IdPClientID }, `"nexus-at-idp"`),
	option.Text("assertion", "/oauth/assertion", true, func(o *Options) *string { return &o.Assertion }, `"eyJhbGciOiJFUzI1NiJ9.e30.sig"`),
	option.Text("assertion_file", "/oauth/assertion_file", false, func(o *Options) *string { return &o.AssertionFile }, `"/var/run/secrets/tokens/mcp"`),
	{HCL: "dpop", JSON: "dpop", Example: `"on"`,
		Decode: func(o *Options, v option.Value) { o.DPoP, _ = v.Choice(DPoPModes) },
		Out: func(o *Options, _ option.Writer) any {
			if o.DPoP == "" {
				return nil
			}
			return o.DPoP
		}},
	option.Text("idp_client_secret", "/oauth/idp_client_secret", true, func(o *Options) *string { return &o.IdPClientSecret }, `"idp-s3cret"`),
}

// ErrUnknownGrant is an oauth grant Apply does not know. The config
// loader checks the grant as it decodes it, so only options built in code
// meet it.
var ErrUnknownGrant = errors.New("unknown oauth grant")

// Apply puts the options into cfg. The grant was checked when the config
// was decoded; an unknown one (options built in code) is an error here
// (ErrUnknownGrant).
func (o *Options) Apply(cfg *Config) error {
	cfg.ClientID = o.ClientID
	cfg.ClientSecret = o.ClientSecret
	cfg.Issuer = o.Issuer
	cfg.Scopes = o.Scopes
	cfg.RedirectURI = o.RedirectURI
	cfg.AuthURL = o.AuthURL
	cfg.TokenURL = o.TokenURL
	cfg.ClientMetadataURL = o.ClientMetadataURL
	if o.PrivateKey != "" {
		cfg.PrivateKeyPEM = []byte(o.PrivateKey)
	}
	cfg.SigningAlg = o.SigningAlg
	cfg.KeyID = o.KeyID
	cfg.DPoP = o.DPoP
	switch o.Grant {
	case "", GrantAuthorizationCode.String():
		cfg.Grant = GrantAuthorizationCode
	case GrantClientCredentials.String():
		cfg.Grant = GrantClientCredentials
	case GrantEnterprise.String():
		cfg.Grant = GrantEnterprise
		cfg.Enterprise = &Enterprise{
			IDToken:         o.IDToken,
			IdPTokenURL:     o.IdPTokenURL,
			IdPIssuer:       o.IdPIssuer,
			IdPClientID:     o.IdPClientID,
			IdPClientSecret: o.IdPClientSecret,
		}
	case GrantJWTBearer.String():
		cfg.Grant = GrantJWTBearer
		cfg.Assertion = o.Assertion
		cfg.AssertionFile = o.AssertionFile
	default:
		return fmt.Errorf("%w %q", ErrUnknownGrant, o.Grant)
	}
	return nil
}
