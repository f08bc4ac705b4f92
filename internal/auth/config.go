package auth

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Grant selects how the client obtains tokens.
type Grant int

const (
	// GrantAuthorizationCode is the interactive flow for people: the
	// authorization code grant with PKCE S256 through a browser and a
	// loopback redirect listener. The default.
	GrantAuthorizationCode Grant = iota
	// GrantClientCredentials is the machine-to-machine flow of the OAuth
	// Client Credentials extension (SEP-1046): the client authenticates
	// with ClientSecret or, with PrivateKeyPEM, a private_key_jwt
	// assertion. It needs ClientID.
	GrantClientCredentials
	// GrantEnterprise is Enterprise-Managed Authorization (SEP-990): an
	// RFC 8693 token exchange at the enterprise IdP turns the user's ID
	// token into an ID-JAG, which an RFC 7523 JWT bearer grant at the MCP
	// authorization server turns into an access token. It needs
	// Config.Enterprise and ClientID.
	GrantEnterprise
	// GrantJWTBearer is workload identity federation (SEP-1933): the
	// RFC 7523 JWT bearer grant with a JWT the workload's platform issued
	// it (a Kubernetes service account token, a cloud identity token),
	// from Config.Assertion, AssertionFile or AssertionFunc. ClientID is
	// optional (sent when set, with ClientSecret or PrivateKeyPEM when
	// those are). A refused grant is reported, never retried with another
	// grant.
	GrantJWTBearer
)

func (g Grant) String() string {
	switch g {
	case GrantAuthorizationCode:
		return "authorization_code"
	case GrantClientCredentials:
		return "client_credentials"
	case GrantEnterprise:
		return "enterprise"
	case GrantJWTBearer:
		return "jwt_bearer"
	}
	return "unknown"
}

// Enterprise configures Enterprise-Managed Authorization (GrantEnterprise).
type Enterprise struct {
	// IDToken is the identity assertion from the user's SSO login at the
	// IdP (an OpenID ID token). IDTokenFunc, when set, is called instead,
	// each time a new ID-JAG is needed, so a host can refresh it.
	IDToken     string
	IDTokenFunc func(ctx context.Context) (string, error)
	// SubjectTokenType defaults to urn:ietf:params:oauth:token-type:id_token
	// (use ...:saml2 for a SAML assertion).
	SubjectTokenType string

	// IdPTokenURL is the IdP's token endpoint; when empty it is discovered
	// from IdPIssuer's metadata.
	IdPTokenURL string
	IdPIssuer   string
	// The client's registration at the IdP. With a secret it authenticates
	// with client_secret_basic, without one it sends client_id alone.
	IdPClientID     string
	IdPClientSecret string
}

// Opener shows the authorization URL to the person: opens a browser,
// prints it, or both. Tests inject one that follows the redirect
// programmatically. It must return promptly; the login completes when the
// redirect reaches the listener.
type Opener func(ctx context.Context, authURL string) error

// Config configures a Client for one server. Zero values mean the
// documented defaults. Config is copied by New.
type Config struct {
	// ServerName is the server's name in the config, for messages.
	ServerName string
	// ServerURL is the MCP endpoint URL: the protected resource.
	ServerURL string

	// Pre-registered client (config "oauth" block). When ClientID is set it
	// is used as is; otherwise a Client ID Metadata Document (when
	// ClientMetadataURL is set and the AS supports them) or Dynamic Client
	// Registration identifies the client.
	ClientID     string
	ClientSecret string
	// Issuer is the issuer identifier of the authorization server the
	// pre-registered client belongs to. Credentials are bound to the
	// authorization server that issued them (SEP-2352): with Issuer set,
	// the client is used with that authorization server only; unset, it
	// is bound to the first one it is used with (remembered in the token
	// store). Either way, a server that moves to another authorization
	// server gets an error rather than these credentials.
	Issuer string
	// Scopes, when set, replace the PRM's scopes_supported as the default
	// request (a challenge's scope still wins).
	Scopes []string
	// RedirectURI fixes the loopback redirect URI (e.g. one registered by
	// hand, http://127.0.0.1:8976/callback). Empty: a free port on
	// ListenAddr with path /callback.
	RedirectURI string
	// AuthURL and TokenURL override the discovered endpoints.
	AuthURL  string
	TokenURL string

	// ClientMetadataURL is this client's Client ID Metadata Document, an
	// https URL with a path; used as client_id by servers that advertise
	// client_id_metadata_document_supported.
	ClientMetadataURL string
	// ClientName is the client_name sent in registration; default "Nexus".
	ClientName string

	Grant Grant
	// PrivateKeyPEM (PKCS#8, PKCS#1 or SEC 1) makes the client authenticate
	// with private_key_jwt. SigningAlg defaults from the key (ES256 for
	// P-256, RS256 for RSA, EdDSA for Ed25519); KeyID sets the JWT "kid".
	PrivateKeyPEM []byte
	SigningAlg    string
	KeyID         string
	Enterprise    *Enterprise

	// The workload's JWT for GrantJWTBearer: AssertionFunc when set, else
	// the file AssertionFile (read afresh for each token, since platforms
	// rotate these files; at most 64 KiB), else Assertion.
	Assertion     string
	AssertionFile string
	AssertionFunc func(ctx context.Context) (string, error)

	// DPoP is DPoPAuto (""), DPoPOn or DPoPOff: whether tokens are bound
	// to a key of the client's (RFC 9449). See dpop.go.
	DPoP string

	// TokenDir holds one 0600 file per server URL; default ~/.nexus/tokens.
	TokenDir string
	// NoStore keeps tokens in memory only.
	NoStore bool

	// Opener shows the authorization URL; default: print it to Out and try
	// to open a browser.
	Opener Opener
	// Out receives the default Opener's instructions; default os.Stderr.
	Out io.Writer
	// ListenAddr is the loopback address of the redirect listener; default
	// 127.0.0.1:0 (a free port). It must be a loopback address.
	ListenAddr string
	// RedirectTimeout bounds the wait for the browser to come back;
	// default 5 minutes.
	RedirectTimeout time.Duration

	// HTTPClient makes the OAuth calls (metadata, registration, tokens).
	// Default: NewHTTPClient(AllowPrivateNetworks).
	HTTPClient           *http.Client
	AllowPrivateNetworks bool

	// MaxAttempts bounds the authorizations run for one scope set in a row
	// (the first one included) before Challenge gives up; default 3.
	MaxAttempts int

	Logger hclog.Logger
	// Diag is the error context (config file and layer) of the server:
	// every *Error carries it, for the report internal/explain makes.
	Diag diag.Context

	// now is the clock (tests).
	now func() time.Time
}

const (
	defaultClientName      = "Nexus"
	defaultListenAddr      = "127.0.0.1:0"
	defaultRedirectTimeout = 5 * time.Minute
	defaultMaxAttempts     = 3
	callbackPath           = "/callback"

	// refreshSkew: tokens are refreshed this long before they expire.
	refreshSkew = 60 * time.Second
	// attemptWindow: a challenge this soon after a token was obtained
	// counts as that token failing (see Client.Challenge).
	attemptWindow = 2 * time.Minute
)
