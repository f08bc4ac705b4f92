package console

import (
	"net"
	"strconv"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Options are the console block of nexus.hcl:
//
//	console {
//	  listen          = "127.0.0.1:8760"
//	  tokens          = [var.console_admin]   // admin: may end sessions
//	  readonly_tokens = [var.console_viewer]  // may look, changes nothing
//	  oidc_client_id  = "nexus-console"       // or log in at the gateway's oauth issuer
//	  role_claim      = "nexus_console_role"
//	  admin_roles     = ["console-admin"]
//	  readonly_roles  = ["console-viewer"]
//	}
//
// The tokens are secrets: give them as sensitive variables or env(), and
// they are compared in constant time, never shown or logged.
type Options struct {
	Listen   string
	Tokens   []string // admin
	ReadOnly []string // read-only
	// OIDCClientID logs people in at the gateway's OAuth issuer (OpenID
	// Connect, the gateway block's oauth) as this client; the secret is
	// for a confidential client ("" for a public one, PKCE either way).
	OIDCClientID, OIDCClientSecret string
	// RoleClaim is the ID token's claim that holds a person's console
	// role; AdminRoles and ReadOnlyRoles are its values that make an
	// admin and a read-only login. Required with OIDCClientID.
	RoleClaim                 string
	AdminRoles, ReadOnlyRoles []string
	// TLSCert and TLSKey serve HTTPS. Without them the console listens on
	// loopback only: its session cookie is Secure elsewhere, and a browser
	// would not send it back over plain HTTP.
	TLSCert, TLSKey string
}

// OptionTable is the console block's options, registered with the config
// loader (config.RegisterBlock).
var OptionTable = option.Table[Options]{
	option.Text("listen", "", false, func(o *Options) *string { return &o.Listen }, `"127.0.0.1:8760"`),
	{HCL: "tokens", JSON: "tokens", Example: `["admin-secret"]`,
		Decode: func(o *Options, v option.Value) { o.Tokens, _ = secrets(v, "tokens") }},
	{HCL: "readonly_tokens", JSON: "readonly_tokens", Example: `["viewer-secret"]`,
		Decode: func(o *Options, v option.Value) { o.ReadOnly, _ = secrets(v, "readonly_tokens") }},
	option.Text("oidc_client_id", "", false, func(o *Options) *string { return &o.OIDCClientID }, `"nexus-console"`),
	{HCL: "oidc_client_secret", JSON: "oidc_client_secret", Example: `var.console_oidc_secret`,
		Decode: func(o *Options, v option.Value) { o.OIDCClientSecret, _ = v.String("/console/oidc_client_secret") }},
	option.Text("role_claim", "", false, func(o *Options) *string { return &o.RoleClaim }, `"nexus_console_role"`),
	{HCL: "admin_roles", JSON: "admin_roles", Example: `["console-admin"]`,
		Decode: func(o *Options, v option.Value) { o.AdminRoles, _ = v.Strings("") }},
	{HCL: "readonly_roles", JSON: "readonly_roles", Example: `["console-viewer"]`,
		Decode: func(o *Options, v option.Value) { o.ReadOnlyRoles, _ = v.Strings("") }},
	option.Text("tls_cert", "", false, func(o *Options) *string { return &o.TLSCert }, `"console.pem"`),
	option.Text("tls_key", "", false, func(o *Options) *string { return &o.TLSKey }, `"console-key.pem"`),
}

// minToken is the shortest token accepted: a guessable one would make the
// login a door.
const minToken = 16

// secrets reads a list of tokens; ptr keeps values from sensitive
// variables as templates, so nothing writes them back out.
func secrets(v option.Value, name string) ([]string, bool) {
	list, ok := v.Strings("/console/" + name)
	if !ok {
		return nil, false
	}
	for i, t := range list {
		if len(t) < minToken {
			v.Fail("console "+name+": token "+strconv.Itoa(i+1)+" is shorter than 16 characters, which a person or a script could guess",
				"Use a long random value, such as the output of: openssl rand -hex 32 (kept in a sensitive variable or env()).")
			return nil, false
		}
	}
	return list, true
}

// Loopback says whether addr (host:port) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Block is the console block of cfg, or nil when it has none.
func Block(cfg *config.Config) *Options { return config.Owned[Options](cfg, "console") }

func init() { config.RegisterBlock("console", OptionTable) }
