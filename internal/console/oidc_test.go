package console_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// issuer is a local OpenID Connect provider on loopback: discovery, keys,
// an authorization endpoint that logs in whoever the test says (no
// form), and a token endpoint that checks the code, the PKCE verifier
// and the client before it signs an ID token with the person's roles.
type issuer struct {
	*httptest.Server
	key    *rsa.PrivateKey
	client string
	secret string

	mu    sync.Mutex
	who   string
	roles map[string][]string // person -> role claim values
	codes map[string]grant
}

type grant struct {
	who, nonce, challenge, redirect string
}

const roleClaim = "nexus_console_role"

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, client: "nexus-console", secret: "console-client-secret-0123456789", codes: map[string]grant{},
		roles: map[string][]string{"alice": {"staff", "console-admin"}, "bob": {"console-viewer"}, "carol": {"staff"}}}
	mux := http.NewServeMux()
	meta := func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"issuer": is.URL, "authorization_endpoint": is.URL + "/authorize", "token_endpoint": is.URL + "/token",
			"jwks_uri": is.URL + "/jwks", "code_challenge_methods_supported": []string{"S256"}, "response_types_supported": []string{"code"}})
	}
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", meta)
	mux.HandleFunc("GET /.well-known/openid-configuration", meta)
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("response_type") != "code" || q.Get("client_id") != is.client || q.Get("code_challenge_method") != "S256" || q.Get("scope") != "openid" {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		code := base64.RawURLEncoding.EncodeToString(key.N.Bytes()[:8]) + q.Get("state")[:8]
		is.mu.Lock()
		is.codes[code] = grant{who: is.who, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
		is.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		id, secret, _ := r.BasicAuth()
		code := r.PostFormValue("code")
		is.mu.Lock()
		g, ok := is.codes[code]
		delete(is.codes, code)
		is.mu.Unlock()
		sum := sha256.Sum256([]byte(r.PostFormValue("code_verifier")))
		switch {
		case id != is.client || secret != is.secret:
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		case !ok || r.PostFormValue("redirect_uri") != g.redirect || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		now := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": is.URL, "aud": is.client, "sub": g.who, "email": g.who + "@example.com",
			"nonce": g.nonce, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), roleClaim: is.roles[g.who]})
		tok.Header["kid"] = "k1"
		signed, err := tok.SignedString(key)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "opaque", "token_type": "Bearer", "id_token": signed})
	})
	is.Server = httptest.NewServer(mux)
	t.Cleanup(is.Close)
	return is
}

func (is *issuer) as(who string) {
	is.mu.Lock()
	is.who = who
	is.mu.Unlock()
}

// TestOIDCLogin: people log in at the gateway's OAuth issuer (a local
// OpenID Connect provider), through the gateway's own login (the same
// issuer, keys and checks as agents' access tokens); the ID token's role
// claim makes an admin or a read-only login, and a person with neither
// role is refused. A way back that did not start in this browser is
// refused. The login page passes axe.
func TestOIDCLogin(t *testing.T) {
	is := newIssuer(t)
	l, err := gateway.NewLogin(&config.Gateway{OAuth: &config.GatewayOAuth{Issuer: is.URL, AgentClaim: "sub", Agents: map[string]string{"*": "claude"}}},
		"http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", OIDCClientID: is.client, OIDCClientSecret: is.secret,
		RoleClaim: roleClaim, AdminRoles: []string{"console-admin"}, ReadOnlyRoles: []string{"console-viewer"}},
		Servers: &fakeServers{list: servers(1)}, Sessions: &fakeSessions{list: sessions(1)}, SSO: l})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(k)
	t.Cleanup(func() { ts.Close(); k.Close() })
	base := ts.URL
	browser := newBrowser(t)
	shots := artifacts(t)

	for _, c := range []struct{ who, role string }{{"alice", "admin"}, {"bob", "read-only"}} {
		t.Run(c.who, func(t *testing.T) {
			is.as(c.who)
			p := person(t, browser)
			do(t, p, "the login page", navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("a.sso")))
			if n := eval[int](t, p, `document.querySelectorAll("#token").length`); n != 0 {
				t.Errorf("a console without tokens offers the token form")
			}
			if c.who == "alice" {
				shot(t, p, shots, "login-sso")
				axe(t, p, "login (single sign-on)")
			}
			do(t, p, "single sign-on", chromedp.Click(chromedp.CSS("a.sso")), chromedp.WaitVisible(chromedp.CSS(`nav[aria-label="Console"]`)))
			if who := eval[string](t, p, `document.querySelector(".logout span").textContent`); who != "oidc "+c.who+"@example.com ("+c.role+")" {
				t.Errorf("logged in as %q", who)
			}
			if cookie := eval[string](t, p, `document.cookie`); cookie != "" {
				t.Errorf("a cookie is readable from script: %q", cookie)
			}
			forms := eval[int](t, p, `fetch("/sessions").then(r => r.text()).then(h => (h.match(/action="\/sessions\/end"/g) || []).length)`)
			if (c.role == "admin") != (forms > 0) {
				t.Errorf("%s (%s) is offered %d end-session forms", c.who, c.role, forms)
			}
		})
	}

	t.Run("no role", func(t *testing.T) {
		is.as("carol")
		p := person(t, browser)
		do(t, p, "single sign-on", navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("a.sso")),
			chromedp.Click(chromedp.CSS("a.sso")), chromedp.WaitVisible(chromedp.CSS(".error")))
		text := eval[string](t, p, `document.querySelector(".error").textContent`)
		if !strings.Contains(text, "no console role") || !strings.Contains(text, "carol@example.com") {
			t.Errorf("a person without a role: %q", text)
		}
		if n := eval[int](t, p, `document.querySelectorAll("nav").length`); n != 0 {
			t.Error("a person without a role was logged in")
		}
		shot(t, p, shots, "login-sso-refused")
	})

	t.Run("not from this browser", func(t *testing.T) {
		// A way back with a state this browser was not sent with: a login
		// another person started, planted in this browser.
		p := person(t, browser)
		do(t, p, "a planted way back", navigate(base+"/login/callback?code=x&state=0123456789abcdef"), chromedp.WaitVisible(chromedp.CSS(".error")))
		if text := eval[string](t, p, `document.querySelector(".error").textContent`); !strings.Contains(text, "did not start in this browser") {
			t.Errorf("a planted way back: %q", text)
		}
	})
}

// A console block with oidc_client_id but no role mapping, or no issuer
// to log in at, is refused when the console is made, saying what to add.
func TestOIDCOptions(t *testing.T) {
	for _, c := range []struct {
		o    console.Options
		sso  bool
		want string
	}{
		{console.Options{OIDCClientID: "c"}, true, "needs role_claim"},
		{console.Options{OIDCClientID: "c", RoleClaim: "r"}, true, "admin_roles or readonly_roles"},
		{console.Options{OIDCClientID: "c", RoleClaim: "r", AdminRoles: []string{"a"}}, false, "gateway { oauth"},
	} {
		cfg := console.Config{Options: c.o, Servers: &fakeServers{}}
		if c.sso {
			cfg.SSO = fakeSSO{}
		}
		if _, err := console.New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want it to say %q", c.o, err, c.want)
		}
	}
}

type fakeSSO struct{ console.SSO }

// The console block's single sign-on options decode, the secret from a
// sensitive variable.
func TestOIDCBlock(t *testing.T) {
	cfg, err := config.ParseHCL([]byte(`
variable "secret" {
  sensitive = true
  default   = "s3cr3t-0123456789abcdef"
}
console {
  oidc_client_id     = "nexus-console"
  oidc_client_secret = var.secret
  role_claim         = "nexus_console_role"
  admin_roles        = ["console-admin", "sre"]
  readonly_roles     = ["console-viewer"]
}
`), diag.Source{File: "nexus.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	o := console.Block(cfg)
	if o == nil || o.OIDCClientID != "nexus-console" || o.OIDCClientSecret != "s3cr3t-0123456789abcdef" || o.RoleClaim != "nexus_console_role" ||
		strings.Join(o.AdminRoles, ",") != "console-admin,sre" || strings.Join(o.ReadOnlyRoles, ",") != "console-viewer" {
		t.Fatalf("console block: %+v", o)
	}
}
