package host

import (
	"time"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/engine"
)

// Version is the Nexus version: the clientInfo a host sends, the
// serverInfo a gateway sends. The release stamps it (ldflags).
var Version = engine.DefaultVersion

// DefaultTimeout applies to each request when neither the caller nor the
// server's config sets one.
const DefaultTimeout = engine.DefaultTimeout

// CLIAgent is the agent the command line acts as. Without an agent "cli"
// block it is trusted: a person at a terminal confirms each server once.
const CLIAgent = engine.CLIAgent

// Fingerprints is each configured server's fingerprint: what approvals
// remember, so that a changed command or URL is asked about again.
func Fingerprints(cfg *Config) map[string]string { return engine.Fingerprints(internalConfig(cfg)) }

// CleanupPlugins stops every plugin process still running: the last
// line of defence on the way out of main.
func CleanupPlugins() { engine.CleanupPlugins() }

// OAuthStatus is what AuthStatus reports of a server's OAuth client: what
// is stored for it.
type OAuthStatus struct {
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

// The conversions keep host's types in step with the engine's.
var _ = OAuthStatus(auth.Status{})
