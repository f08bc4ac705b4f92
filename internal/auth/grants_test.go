package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestClientCredentialsSecret(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_basic"}
	as.grantTypes = []string{"client_credentials"}
	as.clients["svc"] = "svc-secret"
	rs := newFakeRS(t, as)
	rs.scopesSupported = []string{"mcp:read"}
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID, cfg.ClientSecret = "svc", "svc-secret"
		cfg.Opener = func(context.Context, string) error { return errors.New("no browser for machines") }
	})
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, regs, _ := as.snapshot()
	if len(authz) != 0 || len(regs) != 0 || len(toks) != 1 {
		t.Fatalf("authorize %d register %d token %d", len(authz), len(regs), len(toks))
	}
	f := toks[0].form
	if f.Get("grant_type") != "client_credentials" || toks[0].authMethod != authBasic || toks[0].basicUser != "svc" ||
		f.Get("scope") != "mcp:read" || f.Get("resource") != rs.url() {
		t.Errorf("token request %v auth %q user %q", f, toks[0].authMethod, toks[0].basicUser)
	}
}

func TestClientCredentialsPost(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_post"}
	as.clients["svc"] = "svc-secret"
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID, cfg.ClientSecret = "svc", "svc-secret"
	})
	mustCall(t, c, rs.url())
	_, toks, _, _ := as.snapshot()
	if toks[0].authMethod != authPost || toks[0].form.Get("client_secret") != "svc-secret" {
		t.Errorf("auth %q", toks[0].authMethod)
	}
}

func TestClientCredentialsPrivateKeyJWT(t *testing.T) {
	keyPEM, pub := ecKeyPEM(t)
	as := newFakeAS(t)
	as.authMethods = []string{"private_key_jwt"}
	as.clientKey = pub
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID = "jwt-client"
		cfg.PrivateKeyPEM = keyPEM
		cfg.KeyID = "k1"
	})
	mustCall(t, c, rs.url())
	as.checkNoFailures() // the fake AS verified signature, iss, sub, aud, exp, jti
	_, toks, _, _ := as.snapshot()
	if toks[0].authMethod != authPrivateKeyJWT || toks[0].form.Get("grant_type") != "client_credentials" {
		t.Errorf("auth %q grant %q", toks[0].authMethod, toks[0].form.Get("grant_type"))
	}

	// The token is renewed without a browser when it expires.
	as.expiresIn = 60
	var skew atomic.Int64
	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID = "jwt-client"
		cfg.PrivateKeyPEM = keyPEM
		cfg.NoStore = true
		cfg.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	mustCall(t, c2, rs.url())
	mustCall(t, c2, rs.url()) // a 60 s token is not renewed at once
	_, toks, _, _ = as.snapshot()
	before := len(toks)
	skew.Store(int64(50 * time.Second))
	mustCall(t, c2, rs.url()) // expires within the skew: a new grant in Authorize
	_, toks, _, _ = as.snapshot()
	if len(toks) != before+1 || toks[before].form.Get("grant_type") != "client_credentials" {
		t.Errorf("%d token requests, want %d", len(toks), before+1)
	}
	as.checkNoFailures()
}

func TestPrivateKeyJWTWrongKey(t *testing.T) {
	keyPEM, _ := ecKeyPEM(t)
	_, other := ecKeyPEM(t)
	as := newFakeAS(t)
	as.authMethods = []string{"private_key_jwt"}
	as.clientKey = other
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant = GrantClientCredentials
		cfg.ClientID = "jwt-client"
		cfg.PrivateKeyPEM = keyPEM
	})
	_, err := call(t, ctxT(t), c, rs.url())
	var e *Error
	if !errors.Is(err, ErrTokenEndpoint) || !errors.As(err, &e) || e.OAuthError != "invalid_client" || e.Status != 401 {
		t.Fatalf("error %v", err)
	}
}

func TestSignerKeyTypes(t *testing.T) {
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ek, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	ecPEM, _ := ecKeyPEM(t)
	for _, tc := range []struct {
		name, alg, want string
		pem             []byte
	}{
		{"ec", "", "ES256", ecPEM},
		{"rsa pkcs8", "", "RS256", pkcs8(rk)},
		{"rsa pkcs1", "PS256", "PS256", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})},
		{"ed25519", "", "EdDSA", pkcs8(ek)},
	} {
		s, err := newAssertionSigner(tc.pem, tc.alg, "")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if s.method.Alg() != tc.want {
			t.Errorf("%s: alg %s, want %s", tc.name, s.method.Alg(), tc.want)
		}
	}
	for _, bad := range []struct {
		pem []byte
		alg string
	}{{[]byte("not pem"), ""}, {ecPEM, "HS256"}, {ecPEM, "RS256"}, {ecPEM, "none"}} {
		if _, err := newAssertionSigner(bad.pem, bad.alg, ""); err == nil {
			t.Errorf("signer accepted %q with %q", bad.pem[:7], bad.alg)
		}
	}
}

func TestEnterpriseManagedAuthorization(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_basic"}
	as.grantTypes = []string{grantJWTBearer}
	as.clients["xaa-client"] = "xaa-secret"
	idp := newFakeIdP(t, "xaa-client")
	as.idpKey = &idp.key.PublicKey
	as.idpIssuer = idp.srv.URL
	rs := newFakeRS(t, as)
	for _, viaIssuer := range []bool{false, true} {
		ent := &Enterprise{IDToken: idp.idToken, IdPClientID: "idp-client"}
		if viaIssuer {
			ent.IdPIssuer = idp.srv.URL
		} else {
			ent.IdPTokenURL = idp.srv.URL + "/token"
		}
		c := newTestClient(t, rs, func(cfg *Config) {
			cfg.Grant = GrantEnterprise
			cfg.ClientID, cfg.ClientSecret = "xaa-client", "xaa-secret"
			cfg.Enterprise = ent
			cfg.NoStore = true
		})
		mustCall(t, c, rs.url())
	}
	as.checkNoFailures()
	idp.mu.Lock()
	if len(idp.bad) != 0 || len(idp.reqs) != 2 {
		t.Errorf("IdP: %d requests, problems %v", len(idp.reqs), idp.bad)
	}
	ex := idp.reqs[0]
	idp.mu.Unlock()
	if ex.Get("audience") != as.issuer() || ex.Get("resource") != rs.url() || ex.Get("client_id") != "idp-client" {
		t.Errorf("token exchange %v", ex)
	}
	authz, toks, _, _ := as.snapshot()
	if len(authz) != 0 {
		t.Error("the enterprise flow redirected to the MCP authorization server")
	}
	f := toks[0].form
	if f.Get("grant_type") != grantJWTBearer || toks[0].authMethod != authBasic || toks[0].basicUser != "xaa-client" {
		t.Errorf("JWT bearer request %v auth %q", f, toks[0].authMethod)
	}
}

func TestEnterpriseIDTokenFunc(t *testing.T) {
	as := newFakeAS(t)
	as.authMethods = []string{"client_secret_basic"}
	idp := newFakeIdP(t, "xaa-client")
	as.idpKey, as.idpIssuer = &idp.key.PublicKey, idp.srv.URL
	rs := newFakeRS(t, as)
	calls := 0
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant = GrantEnterprise
		cfg.ClientID, cfg.ClientSecret = "xaa-client", "s"
		cfg.Enterprise = &Enterprise{IdPTokenURL: idp.srv.URL + "/token", IDTokenFunc: func(context.Context) (string, error) {
			calls++
			return idp.idToken, nil
		}}
	})
	mustCall(t, c, rs.url())
	if calls != 1 {
		t.Errorf("IDTokenFunc called %d times", calls)
	}
}

func TestConfigErrors(t *testing.T) {
	base := Config{ServerURL: "https://mcp.example/mcp", NoStore: true}
	cases := map[string]func(*Config){
		"no url":                 func(c *Config) { c.ServerURL = "" },
		"relative url":           func(c *Config) { c.ServerURL = "mcp.example/mcp" },
		"plain http remote":      func(c *Config) { c.ServerURL = "http://mcp.example/mcp" },
		"http token url":         func(c *Config) { c.TokenURL = "http://auth.example/token" },
		"cimd without path":      func(c *Config) { c.ClientMetadataURL = "https://client.example" },
		"cimd http":              func(c *Config) { c.ClientMetadataURL = "http://client.example/c.json" },
		"remote redirect":        func(c *Config) { c.RedirectURI = "https://app.example/callback" },
		"non-loopback listen":    func(c *Config) { c.ListenAddr = "0.0.0.0:0" },
		"cc without client":      func(c *Config) { c.Grant = GrantClientCredentials },
		"cc without secret":      func(c *Config) { c.Grant, c.ClientID = GrantClientCredentials, "x" },
		"enterprise without idp": func(c *Config) { c.Grant, c.ClientID, c.Enterprise = GrantEnterprise, "x", &Enterprise{IDToken: "t"} },
		"bad key": func(c *Config) {
			c.PrivateKeyPEM = []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
		},
	}
	for name, mod := range cases {
		cfg := base
		mod(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", name, err)
		}
	}
	ok := base
	ok.ServerURL = "http://localhost:8080/mcp"
	ok.RedirectURI = "http://localhost:8976/callback"
	if _, err := New(ok); err != nil {
		t.Errorf("loopback http: %v", err)
	}
}

func TestStatusBeforeLogin(t *testing.T) {
	c, err := New(Config{ServerName: "s", ServerURL: "https://MCP.example:443/mcp", TokenDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Status()
	if st.LoggedIn || st.ServerURL != "https://mcp.example/mcp" || st.Grant != "authorization_code" {
		t.Errorf("status %+v", st)
	}
}
