package config

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
)

const gatewayHCL = `
variable "claude_token" { sensitive = true }

server "github" {
  prefix = "gh_"
  stdio { command = "gh-mcp" }
}

server "solo" {
  prefix = ""
  stdio { command = "solo" }
}

agent "claude" {
  permission = "yolo"
  tokens     = [var.claude_token]
}

agent "readonly" { permission = "trusted" }

gateway {
  listen           = "127.0.0.1:8750"
  public_url       = "https://nexus.example.com/mcp"
  allowed_origins  = ["https://app.example.com", "http://localhost:3000"]
  required_servers = ["github"]
  tls {
    cert = "certs/gw.pem"
    key  = "certs/gw-key.pem"
  }
  limits {
    max_body_bytes           = 4194304
    max_sessions             = 1000
    max_sessions_per_agent   = 100
    max_requests             = 256
    max_requests_per_agent   = 64
    max_requests_per_session = 32
    max_inflight_bytes       = 536870912
    max_inflight_bytes_per_agent    = 134217728
    max_upstream_sessions_per_agent = 4
    max_sse_events           = 1024
    session_idle_timeout     = "30m"
    shutdown_grace           = 10
  }
  oauth {
    issuer      = "https://login.example.com"
    scopes      = ["mcp"]
    agent_claim = "email"
    agents      = { "alice@example.com" = "claude", "*" = "readonly" }
  }
}
`

func TestGatewayBlock(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", gatewayHCL, env("CLAUDE_TOKEN", "tok-123"))
	g := cfg.Gateway
	if g == nil {
		t.Fatal("no gateway")
	}
	if !filepath.IsAbs(g.TLSCert) || !strings.HasSuffix(g.TLSCert, "certs/gw.pem") || !strings.HasSuffix(g.TLSKey, "certs/gw-key.pem") {
		t.Errorf("TLS paths are not resolved from the file's directory: %q %q", g.TLSCert, g.TLSKey)
	}
	want := &Gateway{
		Listen: "127.0.0.1:8750", PublicURL: "https://nexus.example.com/mcp",
		AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"}, RequiredServers: []string{"github"},
		TLSCert: g.TLSCert, TLSKey: g.TLSKey,
		Limits: GatewayLimits{MaxBodyBytes: 4194304, MaxSessions: 1000, MaxRequests: 256, MaxRequestsPerSession: 32, MaxSSEEvents: 1024,
			SessionIdleTimeout: 30 * time.Minute, ShutdownGrace: 10 * time.Second,
			MaxSessionsPerAgent: 100, MaxRequestsPerAgent: 64, MaxInflightBytes: 512 << 20, MaxInflightBytesPerAgent: 128 << 20, MaxUpstreamSessionsPerAgent: 4},
		OAuth: &GatewayOAuth{Issuer: "https://login.example.com", Scopes: []string{"mcp"}, AgentClaim: "email",
			Agents: map[string]string{"alice@example.com": "claude", "*": "readonly"}},
		Source: g.Source,
	}
	if len(g.RequiredAt) != 1 || g.RequiredAt[0].Source.Line != 25 || len(g.OAuth.AgentsAt) != 2 || g.OAuth.AgentsAt["*"].Source.Line != 48 {
		t.Errorf("where required_servers and agents were written: %+v %+v", g.RequiredAt, g.OAuth.AgentsAt)
	}
	g = withoutSites(g)
	if !reflect.DeepEqual(g, want) {
		t.Errorf("gateway\n got %+v\nwant %+v", g, want)
	}
	if p := cfg.Server("github").Prefix; p == nil || *p != "gh_" {
		t.Errorf("github prefix %v", p)
	}
	if p := cfg.Server("solo").Prefix; p == nil || *p != "" {
		t.Errorf("solo prefix %v", p)
	}
	a := cfg.Agent("claude")
	if !reflect.DeepEqual(a.Tokens, []string{"tok-123"}) || a.Refs["/tokens/0"] == nil {
		t.Errorf("tokens %v refs %v", a.Tokens, a.Refs)
	}

	// Its JSON twin says the same, and compiles without the token's value.
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "tok-123") || !strings.Contains(string(out), "${CLAUDE_TOKEN}") {
		t.Errorf("compiled:\n%s", out)
	}
	twin := mustLoad(t, "nexus.json", string(out), env("CLAUDE_TOKEN", "tok-123"))
	tg := withoutSites(twin.Gateway)
	tg.Source, g.Source = diag.Source{}, diag.Source{}
	tg.TLSCert, tg.TLSKey = g.TLSCert, g.TLSKey // absolute already; the twin lives elsewhere
	if !reflect.DeepEqual(tg, g) {
		t.Errorf("the JSON twin's gateway\n got %+v\nwant %+v", tg, g)
	}
	if p := twin.Server("solo").Prefix; p == nil || *p != "" {
		t.Errorf("twin prefix %v", p)
	}
	if !reflect.DeepEqual(twin.Agent("claude").Tokens, []string{"tok-123"}) {
		t.Errorf("twin tokens %v", twin.Agent("claude").Tokens)
	}
}

// withoutSites is g without the positions its checks point at (and,
// with origin, without where it was written).
func withoutSites(g *Gateway, origin ...bool) *Gateway {
	x := *g
	x.RequiredAt = nil
	if len(origin) > 0 && origin[0] {
		x.Source = diag.Source{}
	}
	if g.OAuth != nil {
		o := *g.OAuth
		o.AgentsAt = nil
		x.OAuth = &o
	}
	return &x
}

// A later layer's gateway block replaces the whole block.
func TestGatewayLayers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.hcl", "gateway {\n  listen = \"127.0.0.1:1\"\n  allowed_origins = [\"https://a.example\"]\n}\n")
	write(t, dir, "b.hcl", "gateway {\n  listen = \"127.0.0.1:2\"\n}\n")
	cfg, err := Load(Options{Files: []string{"a.hcl", "b.hcl"}, Dir: dir, Home: dir, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.Gateway; g.Listen != "127.0.0.1:2" || g.AllowedOrigins != nil || len(g.Overrides) != 1 {
		t.Errorf("merged gateway %+v", g)
	}
}

func TestGatewayErrors(t *testing.T) {
	cases := []struct{ name, src string }{
		{"listen", "gateway {\n  listen = \"8750\"\n}\n"},
		{"origin", "gateway {\n  allowed_origins = [\"https://app.example.com/path\"]\n}\n"},
		{"tls_half", "gateway {\n  tls {\n    cert = \"c.pem\"\n  }\n}\n"},
		{"unknown_attribute", "gateway {\n  listne = \"127.0.0.1:1\"\n}\n"},
		{"insecure_issuer", "gateway {\n  oauth {\n    issuer = \"http://login.example.com\"\n  }\n}\n"},
		{"references", "agent \"a\" {\n  permission = \"yolo\"\n}\ngateway {\n  required_servers = [\"gihub\"]\n  oauth {\n    issuer = \"https://login.example.com\"\n    agents = { \"x\" = \"b\" }\n  }\n}\n"},
		{"twice", "gateway {\n}\ngateway {\n}\n"},
		{"prefix", "server \"a\" {\n  prefix = \"gh.\"\n  stdio { command = \"x\" }\n}\n"},
		{"limits", "gateway {\n  limits {\n    max_sessions   = -1\n    shutdown_grace = \"-5s\"\n  }\n}\n"},
		{"quotas", "gateway {\n  limits {\n    max_sessions           = 10\n    max_sessions_per_agent = 20\n    max_body_bytes         = 1048576\n    max_inflight_bytes_per_agent = 65536\n  }\n}\n"},
		{"public_url", "gateway {\n  public_url = \"https://nexus.example.com/mcp#main\"\n}\n"},
		{"public_url_relative", "gateway {\n  public_url = \"/mcp\"\n}\n"},
		{"tls_no_cert", "gateway {\n  tls {\n    key = \"k.pem\"\n  }\n}\n"},
		{"required_disabled", "server \"gh\" {\n  enabled = false\n  stdio { command = \"x\" }\n}\ngateway {\n  required_servers = [\"gh\"]\n}\n"},
		{"agent_claim", "gateway {\n  oauth {\n    issuer      = \"https://login.example.com\"\n    agent_claim = \"\"\n  }\n}\n"},
		{"empty_token", "agent \"a\" {\n  permission = \"yolo\"\n  tokens     = [\"\"]\n}\n"},
		{"state_key", "variable \"k\" {\n  sensitive = true\n  default   = \"not-a-key\"\n}\ngateway {\n  state_key = var.k\n}\n"},
		{"agent_roots", "agent \"a\" {\n  permission = \"yolo\"\n  roots      = [\"/srv/ok\", \"relative/dir\"]\n}\n"},
		{"shared_token", "variable \"t\" {\n  sensitive = true\n  default   = \"0123456789abcdef0123\"\n}\nagent \"a\" {\n  permission = \"yolo\"\n  tokens     = [var.t]\n}\nagent \"b\" {\n  permission = \"sandboxed\"\n  tokens     = [var.t]\n}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "nexus.hcl", tc.src, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "gateway_"+tc.name, errText(err))
		})
	}
}

// The nexus-json dialect says the same about the same mistakes.
func TestGatewayJSONErrors(t *testing.T) {
	cases := []struct{ name, src string }{
		{"values", `{"gateway": {
  "listen": "nope",
  "public_url": "ftp://nexus.example.com/mcp",
  "allowed_origins": ["https://app.example.com/x"],
  "limits": {"max_sessions": "many", "max_requests": -2, "shutdown_grace": 0},
  "tls": {"cert": "c.pem"}
}}`},
		{"oauth", `{"gateway": {"oauth": {"jwks_url": "http://keys.example.com/jwks", "agents": ["claude"]}}}`},
		{"references", `{
  "agents": {"a": {"permission": "yolo"}},
  "gateway": {
    "required_servers": ["gihub"],
    "oauth": {"issuer": "https://login.example.com", "agents": {"x": "b"}}
  }
}`},
		{"quotas", `{"gateway": {"limits": {"max_requests": 8, "max_requests_per_agent": 16, "max_inflight_bytes": 1024, "max_upstream_sessions_per_agent": -1}}}`},
		{"bridge", `{"gateway": {"input_ttl": "soon", "limits": {"max_bridged_upstreams": 8, "max_bridged_upstreams_per_agent": 16}}}`},
		// A nested block that is not an object: the fix is its own example.
		{"nested_kinds", `{"gateway": {"tls": "c.pem", "limits": []}}`},
		{"twice", "{\n  \"gateway\": {\"listen\": \"127.0.0.1:1\"},\n  \"gateway\": {\"listen\": \"127.0.0.1:2\"}\n}\n"},
		{"prefix_and_tokens", `{
  "mcpServers": {"a": {"command": "x", "prefix": "a.b"}},
  "agents": {"c": {"permission": "yolo", "tokens": [""]}, "d": {"permission": "yolo", "tokens": [7]}}
}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "nexus.json", tc.src, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "gateway_json_"+tc.name, errText(err))
		})
	}
}

// Limits of 0 are the gateway's defaults, as leaving them out is.
func TestGatewayZeroLimits(t *testing.T) {
	for name, src := range map[string]string{
		"nexus.hcl":  "gateway {\n  limits {\n    max_sessions = 0\n    shutdown_grace = 0\n    session_idle_timeout = \"0s\"\n  }\n}\n",
		"nexus.json": `{"gateway": {"limits": {"max_sessions": 0, "shutdown_grace": "0", "session_idle_timeout": 0}}}`,
	} {
		cfg := mustLoad(t, name, src, nil)
		if cfg.Gateway.Limits != (GatewayLimits{}) {
			t.Errorf("%s: %+v", name, cfg.Gateway.Limits)
		}
	}
}

// Tokens from the environment: short ones warn, and with --allow-unset
// (show, compile) an unset one is no error.
func TestTokenChecks(t *testing.T) {
	src := "variable \"t\" {\n  sensitive = true\n}\nagent \"a\" {\n  permission = \"yolo\"\n  tokens     = [var.t, env(\"OTHER\")]\n}\n"
	cfg := mustLoad(t, "nexus.hcl", src, env("T", "short", "OTHER", "0123456789abcdef0123"))
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].String(), "token 1 (${T}) is 5 characters long") || strings.Contains(cfg.Warnings[0].String(), "short\"") {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	if _, err := loadOne(t, "nexus.hcl", src, env("T", "", "OTHER", "0123456789abcdef0123")); err == nil || !strings.Contains(err.Error(), `token 1 is empty (${T} is empty in this environment)`) {
		t.Errorf("empty from the environment: %v", err)
	}
	dir := t.TempDir()
	write(t, dir, "nexus.hcl", src)
	if _, err := Load(Options{Files: []string{"nexus.hcl"}, Dir: dir, Home: dir, LookupEnv: env(), AllowUnset: true}); err != nil {
		t.Errorf("allow unset: %v", err)
	}
}

// Literal tokens load, with a warning to move them to a variable; they
// never compile into another file.
func TestLiteralTokens(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", "agent \"a\" {\n  permission = \"yolo\"\n  tokens = [\"in-the-file\"]\n}\n", nil)
	if len(cfg.Warnings) == 0 || !strings.Contains(cfg.Warnings[0].String(), "put it in a sensitive variable") {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil || strings.Contains(string(out), "in-the-file") {
		t.Errorf("compiled %v:\n%s", err, out)
	}
	// --show-secrets writes it, so the output loads back the same.
	out, _, err = CompileShowingSecrets(cfg, FormatNexusJSON)
	if err != nil || !strings.Contains(string(out), `"in-the-file"`) {
		t.Errorf("compiled showing secrets %v:\n%s", err, out)
	}
}

// on_error takes "deny" or "allow" for both kinds of filter; "pass", which
// sanitizers once took, is refused with the fix.
func TestOnErrorPass(t *testing.T) {
	_, err := loadOne(t, "nexus.hcl", "filter \"f\" {\n  kind     = \"sanitizer\"\n  wasm     = \"f.wasm\"\n  on_error = \"pass\"\n}\n", nil)
	if err == nil || !strings.Contains(err.Error(), `use on_error = "allow"`) {
		t.Errorf("pass: %v", err)
	}
}

// A gateway URL is written as it is: encoding/json's HTML escaping would
// turn & into \u0026, which clients read back the same but people do not.
func TestViaGatewayURLAsWritten(t *testing.T) {
	out, _, err := ViaGateway(&Config{}, FormatMCPServers, "", "https://nexus.example.com/mcp?tenant=a&region=eu", nil)
	if err != nil || !strings.Contains(string(out), `"https://nexus.example.com/mcp?tenant=a&region=eu"`) {
		t.Errorf("%v\n%s", err, out)
	}
}

// The session store: a URL checked when the config loads; its password,
// from a sensitive variable, is written back as the reference, and a
// literal one is masked.
func TestGatewaySessionStore(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
variable "redis_password" { sensitive = true }
gateway {
  session_store = "redis://:${var.redis_password}@redis.internal:6379/0"
}
`, func(k string) (string, bool) {
		if k == "REDIS_PASSWORD" {
			return "s3cret", true
		}
		return "", false
	})
	if cfg.Gateway.SessionStore != "redis://:s3cret@redis.internal:6379/0" {
		t.Fatalf("%q", cfg.Gateway.SessionStore)
	}
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "s3cret") || !strings.Contains(string(out), `"session_store": "redis://:${REDIS_PASSWORD}@redis.internal:6379/0"`) {
		t.Fatalf("compiled:\n%s", out)
	}
	back := mustLoad(t, "nexus.json", string(out), func(k string) (string, bool) { return "s3cret", k == "REDIS_PASSWORD" })
	if back.Gateway.SessionStore != cfg.Gateway.SessionStore {
		t.Errorf("round trip: %q", back.Gateway.SessionStore)
	}
	literal := mustLoad(t, "nexus.hcl", "gateway {\n  session_store = \"redis://:pw-in-file@127.0.0.1:6379\"\n}\n", nil)
	if out, _, _ := Compile(literal, FormatNexusJSON); strings.Contains(string(out), "pw-in-file") {
		t.Errorf("a literal password was compiled out:\n%s", out)
	}
	for _, bad := range []string{"mysql://db/x", "redis://", "redis://[::1", "redis://u:top secret@host:6379"} {
		_, err := loadOne(t, "nexus.hcl", "gateway {\n  session_store = \""+bad+"\"\n}\n", nil)
		if err == nil {
			t.Errorf("%s loaded", bad)
		} else if _, problem, _ := strings.Cut(err.Error(), "Problem:"); strings.Contains(strings.SplitN(problem, "\n", 2)[0], "top secret") {
			// The quoted source line is the user's own; the problem
			// must not repeat the password.
			t.Errorf("the problem shows the password: %v", err)
		}
	}
}

// An agent's roots and the gateway's state_key load; the key, from a
// sensitive variable, parses; one written in the file is a warning and
// compiles to a placeholder, never the key.
func TestGatewayStateKeyAndRoots(t *testing.T) {
	const key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	src := "variable \"k\" {\n  sensitive = true\n  default   = \"" + key + "\"\n}\n" +
		"agent \"a\" {\n  permission = \"yolo\"\n  roots      = [\"/srv/repo\", \"https://git.example.com/r\"]\n}\n" +
		"gateway {\n  state_key = var.k\n}\n"
	cfg, err := loadOne(t, "nexus.hcl", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := cfg.Agent("a"); a == nil || !reflect.DeepEqual(a.Roots, []string{"/srv/repo", "https://git.example.com/r"}) {
		t.Errorf("roots: %+v", a)
	}
	if b, err := ParseStateKey(cfg.Gateway.StateKey); err != nil || len(b) != 32 {
		t.Errorf("state_key: %v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %+v", cfg.Warnings)
	}
	cfg, err = loadOne(t, "nexus.hcl", "gateway {\n  state_key = \""+key+"\"\n}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Message, "sensitive variable") || strings.Contains(cfg.Warnings[0].Message, key) {
		t.Errorf("a key written in the file: %+v", cfg.Warnings)
	}
	// Compile never copies a key written in the file: it names it, and
	// says where it belongs.
	out, warns, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), key) || !strings.Contains(string(out), "[a key written in ") ||
		!slices.ContainsFunc(warns, func(w Warning) bool { return strings.Contains(w.Message, "state_key = var.") }) {
		t.Errorf("compiled a key written in the file:\n%s\n%+v", out, warns)
	}
	js, err := loadOne(t, "nexus.json", `{"agents": {"a": {"permission": "yolo", "roots": ["/srv/repo"]}}, "gateway": {"state_key": "`+key+`"}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := js.Agent("a"); a == nil || len(a.Roots) != 1 || js.Gateway.StateKey != key {
		t.Errorf("nexus-json: %+v %+v", a, js.Gateway)
	}
}
