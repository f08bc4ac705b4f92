package auth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustCall runs one request through the authorizer and expects a 200.
func mustCall(t *testing.T, c Authorizer, target string) {
	t.Helper()
	resp, err := call(t, ctxT(t), c, target)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

// TestDiscoveryVariants runs the full authorization code flow against each
// way of publishing the metadata that the spec allows, and checks the
// order in which the client looked.
func TestDiscoveryVariants(t *testing.T) {
	cases := []struct {
		name    string
		prm     string
		asMeta  string
		prefix  string
		wantPRM []string // PRM paths requested, in order
		wantAS  []string // AS metadata paths requested, in order
	}{
		{"header+rfc8414", "header", "oauth", "", []string{"/.well-known/oauth-protected-resource/mcp"}, []string{"/.well-known/oauth-authorization-server"}},
		{"path-aware+oidc", "path", "oidc", "", []string{"/.well-known/oauth-protected-resource/mcp"},
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"root+rfc8414-path-insertion", "root", "oauth", "/tenant1",
			[]string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"},
			[]string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"custom-header+oidc-path-insertion", "custom", "oidc", "/tenant1", []string{"/custom/metadata.json"},
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
		{"header+oidc-path-appending", "header", "oidc-append", "/tenant1", []string{"/.well-known/oauth-protected-resource/mcp"},
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1", "/tenant1/.well-known/openid-configuration"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.prefix, as.metaLocation = tc.prefix, tc.asMeta
			rs := newFakeRS(t, as)
			rs.prm = tc.prm
			c := newTestClient(t, rs, nil)
			mustCall(t, c, rs.url())
			as.checkNoFailures()
			_, _, regs, hits := as.snapshot()
			if !slices.Equal(hits, tc.wantAS) {
				t.Errorf("AS metadata requests %v, want %v", hits, tc.wantAS)
			}
			rs.mu.Lock()
			prmHits := rs.prmHits
			rs.mu.Unlock()
			if !slices.Equal(prmHits, tc.wantPRM) {
				t.Errorf("PRM requests %v, want %v", prmHits, tc.wantPRM)
			}
			if len(regs) != 1 {
				t.Errorf("%d registrations, want 1 (DCR)", len(regs))
			}
		})
	}
}

// TestAuthCodePKCE checks the authorization and token requests in detail.
func TestAuthCodePKCE(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, _, _ := as.snapshot()
	if len(authz) != 1 || len(toks) != 1 {
		t.Fatalf("%d authorization and %d token requests, want 1 and 1", len(authz), len(toks))
	}
	q, f := authz[0], toks[0].form
	if q.Get("code_challenge_method") != "S256" || s256(f.Get("code_verifier")) != q.Get("code_challenge") {
		t.Errorf("PKCE: challenge %q method %q, verifier %q", q.Get("code_challenge"), q.Get("code_challenge_method"), f.Get("code_verifier"))
	}
	if len(f.Get("code_verifier")) < 43 {
		t.Errorf("code_verifier too short: %d", len(f.Get("code_verifier")))
	}
	if q.Get("resource") != rs.url() || f.Get("resource") != rs.url() {
		t.Errorf("resource: authorize %q, token %q, want %q", q.Get("resource"), f.Get("resource"), rs.url())
	}
	if len(q.Get("state")) < 32 {
		t.Errorf("weak state %q", q.Get("state"))
	}
	if q.Has("scope") {
		t.Errorf("scope %q sent although neither the challenge nor the PRM names any", q.Get("scope"))
	}
	if f.Get("grant_type") != "authorization_code" || toks[0].authMethod != authNone {
		t.Errorf("token request: grant %q, auth %q", f.Get("grant_type"), toks[0].authMethod)
	}
}

// TestLegacyMetadataAtRoot: a 2025-03-26 server with no PRM, whose
// authorization server metadata is at the server's root with endpoints
// under /oauth.
func TestLegacyMetadataAtRoot(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prm = "none"
	// Serve the AS from the resource server's origin, metadata at the root
	// but issuer and endpoints under /oauth.
	as.srv.Close()
	as.srv = rs.srv
	as.prefix = "/oauth"
	rs.legacyAS = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-authorization-server" {
			as.mu.Lock()
			as.metaHits = append(as.metaHits, r.URL.Path)
			as.mu.Unlock()
			writeJSON(w, 200, as.metadata())
			return
		}
		as.serve(w, r)
	})
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, regs, _ := as.snapshot()
	if len(authz) != 1 || len(toks) != 1 || len(regs) != 1 {
		t.Fatalf("authorize %d token %d register %d, want 1 each", len(authz), len(toks), len(regs))
	}
	if authz[0].Get("resource") != rs.url() {
		t.Errorf("resource %q, want the server URL", authz[0].Get("resource"))
	}
}

// TestLegacyDefaultEndpoints: no metadata at all; /authorize, /token and
// /register at the server root are used, and PKCE S256 still.
func TestLegacyDefaultEndpoints(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prm = "none"
	as.srv.Close()
	as.srv = rs.srv
	as.metaLocation = "none"
	as.regSecret = true // the registration returns a secret and no method
	rs.legacyAS = http.HandlerFunc(as.serve)
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	_, toks, regs, _ := as.snapshot()
	if len(regs) != 1 || len(toks) != 1 {
		t.Fatalf("register %d token %d", len(regs), len(toks))
	}
	if toks[0].authMethod != authBasic {
		t.Errorf("client with a registered secret and no method used %q, want the RFC 7591 default client_secret_basic", toks[0].authMethod)
	}
}

// TestApplicationType: native for loopback and private-use redirect
// URIs, web for a remote host (SEP-837).
func TestApplicationType(t *testing.T) {
	for uri, want := range map[string]string{
		"http://127.0.0.1:8976/callback":     "native",
		"http://localhost:8976/callback":     "native",
		"http://[::1]:8976/callback":         "native",
		"com.example.nexus:/callback":        "native",
		"https://nexus.example.com/callback": "web",
		"http://10.0.0.5/callback":           "web",
	} {
		if got := applicationType(uri); got != want {
			t.Errorf("applicationType(%q) = %q, want %q", uri, got, want)
		}
	}
}

func TestDCRRequestAndReuse(t *testing.T) {
	as := newFakeAS(t)
	as.scopesSupported = []string{"mcp", "offline_access"}
	rs := newFakeRS(t, as)
	dir := t.TempDir()
	c := newTestClient(t, rs, func(cfg *Config) { cfg.TokenDir = dir })
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	_, _, regs, _ := as.snapshot()
	if len(regs) != 1 {
		t.Fatalf("%d registrations", len(regs))
	}
	r := regs[0]
	gt, _ := json.Marshal(r["grant_types"])
	if !strings.Contains(string(gt), "refresh_token") || !strings.Contains(string(gt), "authorization_code") {
		t.Errorf("grant_types %s, want authorization_code and refresh_token (SEP-2207)", gt)
	}
	ru, _ := json.Marshal(r["redirect_uris"])
	if !strings.Contains(string(ru), "http://127.0.0.1:") || !strings.Contains(string(ru), "/callback") {
		t.Errorf("redirect_uris %s", ru)
	}
	if r["token_endpoint_auth_method"] != "none" || r["client_name"] != "Nexus (test)" {
		t.Errorf("registration %v", r)
	}
	if r["application_type"] != "native" {
		t.Errorf("application_type %v, want native for a loopback redirect URI (SEP-837)", r["application_type"])
	}

	// A new login (another process, same store) reuses the registration.
	c2 := newTestClient(t, rs, func(cfg *Config) { cfg.TokenDir = dir })
	if err := c2.Login(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	_, _, regs, _ = as.snapshot()
	if len(regs) != 1 {
		t.Errorf("%d registrations after a second login, want the first reused", len(regs))
	}
}

func TestCIMD(t *testing.T) {
	const cimd = "https://client.example/nexus.json"
	as := newFakeAS(t)
	as.cimd = true
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) { cfg.ClientMetadataURL = cimd })
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, regs, _ := as.snapshot()
	if len(regs) != 0 {
		t.Errorf("registered although the AS supports client ID metadata documents")
	}
	if authz[0].Get("client_id") != cimd || toks[0].form.Get("client_id") != cimd || toks[0].authMethod != authNone {
		t.Errorf("client_id %q / %q, auth %q", authz[0].Get("client_id"), toks[0].form.Get("client_id"), toks[0].authMethod)
	}
	if st := c.Status(); st.ClientSource != "cimd" || st.ClientID != cimd {
		t.Errorf("status %+v", st)
	}

	// Without AS support the metadata URL is not used: DCR is.
	as2 := newFakeAS(t)
	rs2 := newFakeRS(t, as2)
	c2 := newTestClient(t, rs2, func(cfg *Config) { cfg.ClientMetadataURL = cimd })
	mustCall(t, c2, rs2.url())
	if _, _, regs, _ := as2.snapshot(); len(regs) != 1 {
		t.Errorf("%d registrations, want DCR when CIMD is not supported", len(regs))
	}
}

func TestPreRegistered(t *testing.T) {
	as := newFakeAS(t)
	as.noDCR = true
	as.authMethods = []string{"client_secret_basic"}
	as.clients["pre-client"] = "pre-secret"
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) { cfg.ClientID, cfg.ClientSecret = "pre-client", "pre-secret" })
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, regs, _ := as.snapshot()
	if len(regs) != 0 || authz[0].Get("client_id") != "pre-client" {
		t.Errorf("registrations %d, client_id %q", len(regs), authz[0].Get("client_id"))
	}
	if toks[0].authMethod != authBasic || toks[0].basicUser != "pre-client" || toks[0].basicPass != "pre-secret" {
		t.Errorf("token auth %q user %q", toks[0].authMethod, toks[0].basicUser)
	}

	// The stored file must not copy the configured secret.
	b, err := os.ReadFile(c.Status().File)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "pre-secret") {
		t.Error("the token file contains the configured client secret")
	}
}

func TestTokenEndpointAuthMethods(t *testing.T) {
	for _, m := range []string{authBasic, authPost, authNone} {
		t.Run(m, func(t *testing.T) {
			as := newFakeAS(t)
			as.authMethods = []string{m}
			as.regMethod = m
			as.regSecret = m != authNone
			rs := newFakeRS(t, as)
			c := newTestClient(t, rs, nil)
			mustCall(t, c, rs.url())
			as.checkNoFailures()
			_, toks, regs, _ := as.snapshot()
			if regs[0]["token_endpoint_auth_method"] != map[string]string{authBasic: authBasic, authPost: authPost, authNone: authNone}[m] {
				t.Errorf("registered for %v", regs[0]["token_endpoint_auth_method"])
			}
			if toks[0].authMethod != m {
				t.Errorf("token request authenticated with %q, want %q", toks[0].authMethod, m)
			}
			if m == authBasic && !strings.Contains(toks[0].basicUser+":"+toks[0].basicPass, ":dcr-secret-") {
				t.Errorf("basic credentials %q:%q", toks[0].basicUser, toks[0].basicPass)
			}
		})
	}
}

func TestScopeSelection(t *testing.T) {
	cases := []struct {
		name            string
		headerScope     string
		scopesSupported []string
		config          []string
		asScopes        []string
		want            string
		wantAbsent      bool
	}{
		{name: "from WWW-Authenticate", headerScope: "mcp:basic", scopesSupported: []string{"mcp:basic", "mcp:other"}, want: "mcp:basic"},
		{name: "from scopes_supported", scopesSupported: []string{"mcp:basic", "mcp:read", "mcp:write"}, want: "mcp:basic mcp:read mcp:write"},
		{name: "omitted", wantAbsent: true},
		{name: "config beats PRM", scopesSupported: []string{"a"}, config: []string{"b", "c"}, want: "b c"},
		{name: "offline_access when the AS lists it", headerScope: "mcp:basic", asScopes: []string{"mcp:basic", "offline_access"}, want: "mcp:basic offline_access"},
		{name: "no offline_access otherwise", scopesSupported: []string{"mcp:basic", "mcp:read"}, asScopes: []string{"mcp:basic", "mcp:read"}, want: "mcp:basic mcp:read"},
		{name: "resource server's offline_access dropped", headerScope: "mcp:basic offline_access", want: "mcp:basic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.scopesSupported = tc.asScopes
			rs := newFakeRS(t, as)
			rs.headerScope = tc.headerScope
			rs.scopesSupported = tc.scopesSupported
			c := newTestClient(t, rs, func(cfg *Config) { cfg.Scopes = tc.config })
			mustCall(t, c, rs.url())
			authz, _, _, _ := as.snapshot()
			q := authz[0]
			if tc.wantAbsent {
				if q.Has("scope") {
					t.Errorf("scope %q, want none", q.Get("scope"))
				}
				return
			}
			if q.Get("scope") != tc.want {
				t.Errorf("scope %q, want %q", q.Get("scope"), tc.want)
			}
		})
	}
}

func TestRefreshBeforeExpiry(t *testing.T) {
	as := newFakeAS(t)
	as.alwaysRefresh = true
	rs := newFakeRS(t, as)
	var later atomic.Int64
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.now = func() time.Time { return time.Now().Add(time.Duration(later.Load())) }
	})
	mustCall(t, c, rs.url())
	first := c.token()
	if first == nil || first.RefreshToken == "" {
		t.Fatalf("no refresh token stored: %+v", first)
	}
	mustCall(t, c, rs.url()) // an hour left: used as it is
	if _, toks, _, _ := as.snapshot(); len(toks) != 1 {
		t.Fatalf("%d token requests before expiry, want 1", len(toks))
	}
	later.Store(int64(time.Hour - 30*time.Second)) // inside the refresh skew
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, _, _ := as.snapshot()
	if len(authz) != 1 {
		t.Errorf("%d authorization requests, want 1 (refresh, not a new login)", len(authz))
	}
	last := toks[len(toks)-1].form
	if last.Get("grant_type") != "refresh_token" || last.Get("refresh_token") != first.RefreshToken || last.Get("resource") != rs.url() {
		t.Errorf("refresh request %v", last)
	}
	if cur := c.token(); cur.AccessToken == first.AccessToken {
		t.Error("token not replaced after refresh")
	}
}

// TestRefreshOn401: the server rejects a stored token; its refresh token is
// used before any new login.
func TestRefreshOn401(t *testing.T) {
	as := newFakeAS(t)
	as.alwaysRefresh = true
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	as.mu.Lock()
	for k := range as.tokens {
		delete(as.tokens, k) // the server forgets every access token
	}
	as.mu.Unlock()
	mustCall(t, c, rs.url())
	authz, toks, _, _ := as.snapshot()
	if len(authz) != 1 || toks[len(toks)-1].form.Get("grant_type") != "refresh_token" {
		t.Errorf("authorizations %d, last grant %q", len(authz), toks[len(toks)-1].form.Get("grant_type"))
	}
}

func TestStepUp(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.headerScope = "mcp:basic"
	rs.scopesSupported = []string{"mcp:basic"}
	rs.required = func(op string) []string {
		if op == "call" {
			return []string{"mcp:basic", "mcp:write"}
		}
		return []string{"mcp:basic"}
	}
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	mustCall(t, c, rs.url()+"?op=call")
	as.checkNoFailures()
	authz, _, _, _ := as.snapshot()
	if len(authz) != 2 {
		t.Fatalf("%d authorizations, want 2", len(authz))
	}
	if authz[0].Get("scope") != "mcp:basic" {
		t.Errorf("initial scope %q", authz[0].Get("scope"))
	}
	if got := strings.Fields(authz[1].Get("scope")); !slices.Contains(got, "mcp:basic") || !slices.Contains(got, "mcp:write") {
		t.Errorf("step-up scope %q, want mcp:basic and mcp:write", authz[1].Get("scope"))
	}
}

func TestStepUpLimit(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.headerScope = "mcp:admin"
	rs.always403 = true
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrInsufficientScope) {
		t.Fatalf("error %v, want ErrInsufficientScope", err)
	}
	authz, _, _, _ := as.snapshot()
	if len(authz) > 3 || len(authz) == 0 {
		t.Errorf("%d authorization attempts, want 1 to 3", len(authz))
	}
	if !strings.Contains(Explain(err).Error(), "403 insufficient_scope") {
		t.Errorf("message does not say what happened:\n%v", err)
	}
}

func TestUnauthorizedForever(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.always401 = true
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("error %v, want ErrUnauthorized", err)
	}
	authz, _, _, _ := as.snapshot()
	if len(authz) != 3 {
		t.Errorf("%d authorizations, want 3 (bounded)", len(authz))
	}
	if hits := rs.hits.Load(); hits != 4 {
		t.Errorf("%d requests to the server, want 4", hits)
	}
	// After giving up, the next request starts a fresh (bounded) sequence.
	_, err = call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("second call: %v", err)
	}
}

// TestConcurrentChallenges: many requests hit 401 at once; one login runs
// and the others retry with its token.
func TestConcurrentChallenges(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := call(t, ctxT(t), c, rs.url())
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- errors.New(resp.Status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if authz, _, _, _ := as.snapshot(); len(authz) != 1 {
		t.Errorf("%d logins for concurrent 401s, want 1", len(authz))
	}
}

// TestIssParameter is RFC 9207 as the 2026-07-28 spec applies it: a
// present iss is compared to the recorded issuer by plain string
// comparison whether or not the metadata advertises it; an absent one is
// refused only when advertised. A refused response's code never reaches
// the token endpoint. (The conformance scenarios auth/iss-*.)
func TestIssParameter(t *testing.T) {
	cases := []struct {
		name      string
		advertise bool
		send      string
		ok        bool
	}{
		{"iss-supported", true, "correct", true},
		{"iss-not-advertised", false, "omit", true},
		{"iss-present-not-advertised", false, "correct", true},
		{"iss-supported-missing", true, "omit", false},
		{"iss-wrong-issuer", true, "wrong", false},
		{"iss-unexpected", false, "wrong", false},
		{"iss-normalized", true, "slash", false},
		{"iss-normalized-not-advertised", false, "slash", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := newFakeAS(t)
			as.issParam, as.issSend = tc.advertise, tc.send
			rs := newFakeRS(t, as)
			c := newTestClient(t, rs, nil)
			_, err := call(t, ctxT(t), c, rs.url())
			_, toks, _, _ := as.snapshot()
			if tc.ok {
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				if len(toks) != 1 {
					t.Fatalf("%d token requests, want 1", len(toks))
				}
				return
			}
			if !errors.Is(err, ErrIssMismatch) {
				t.Fatalf("error %v, want ErrIssMismatch", err)
			}
			if len(toks) != 0 {
				t.Error("the code was redeemed despite the iss check")
			}
		})
	}
}

// TestIssBeforeError: an error response from the wrong issuer is not
// acted on or shown (its description could be an attacker's text).
func TestIssBeforeError(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Opener = followOpener(t, func(u *url.URL) {
			q := u.Query()
			q.Del("code")
			q.Set("error", "access_denied")
			q.Set("error_description", "call +1 555 0100 to restore access")
			q.Set("iss", "https://evil.example.com")
			u.RawQuery = q.Encode()
		})
	})
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrIssMismatch) || errors.Is(err, ErrAuthorizationDenied) {
		t.Fatalf("error %v, want ErrIssMismatch only", err)
	}
	if strings.Contains(err.Error(), "555") {
		t.Errorf("the error description of a mismatched response was shown: %v", err)
	}
	checkGolden(t, "iss_mismatch", err, names(rs, as)...)
}

func TestTokenStore(t *testing.T) {
	as := newFakeAS(t)
	as.alwaysRefresh = true
	rs := newFakeRS(t, as)
	dir := filepath.Join(t.TempDir(), "tokens")
	c := newTestClient(t, rs, func(cfg *Config) { cfg.TokenDir = dir })
	mustCall(t, c, rs.url())

	st := c.Status()
	if !st.LoggedIn || !st.CanRefresh || st.File == "" || filepath.Dir(st.File) != dir {
		t.Fatalf("status %+v", st)
	}
	fi, err := os.Stat(st.File)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(dir)
	if di.Mode().Perm() != 0o700 {
		t.Errorf("token dir mode %v, want 0700", di.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the store, want 1 (no temporary files left)", len(entries))
	}

	// Reload: a new client uses the stored token without any login.
	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.TokenDir = dir
		cfg.Opener = func(context.Context, string) error { return errors.New("no login expected") }
	})
	mustCall(t, c2, rs.url())
	if authz, _, _, _ := as.snapshot(); len(authz) != 1 {
		t.Errorf("%d logins, want the stored token reused", len(authz))
	}

	// A file others can read is tightened on load.
	if err := os.Chmod(st.File, 0o644); err != nil {
		t.Fatal(err)
	}
	c3 := newTestClient(t, rs, func(cfg *Config) { cfg.TokenDir = dir })
	if !c3.Status().LoggedIn {
		t.Error("token not loaded")
	}
	fi, _ = os.Stat(st.File)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after load %v, want 0600", fi.Mode().Perm())
	}

	// Another server URL on the same host gets another file.
	if fileName("http://127.0.0.1:1/a") == fileName("http://127.0.0.1:1/b") {
		t.Error("two server URLs share a token file")
	}

	// Logout removes it and revokes.
	if err := c3.Logout(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.File); !os.IsNotExist(err) {
		t.Errorf("token file still there after logout: %v", err)
	}
	if c3.Status().LoggedIn {
		t.Error("still logged in after logout")
	}
}

func TestRevokeOnLogout(t *testing.T) {
	as := newFakeAS(t)
	as.revocation = true
	as.alwaysRefresh = true
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	rt := c.token().RefreshToken
	if err := c.Logout(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.revoked) != 1 || as.revoked[0] != rt {
		t.Errorf("revoked %v, want the refresh token", as.revoked)
	}
}

// TestAuthorizeSameOriginOnly: the token never goes to another origin.
func TestAuthorizeSameOriginOnly(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	for _, u := range []string{"https://other.example/mcp", "http://127.0.0.2:1/mcp", strings.Replace(rs.url(), "http://", "https://", 1)} {
		req, _ := http.NewRequest("POST", u, nil)
		if err := c.Authorize(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if h := req.Header.Get("Authorization"); h != "" {
			t.Errorf("token sent to %s", u)
		}
	}
	req, _ := http.NewRequest("GET", rs.srv.URL+"/mcp/sse", nil)
	c.Authorize(context.Background(), req)
	if req.Header.Get("Authorization") == "" {
		t.Error("no token on a request to the server's own origin")
	}
}

func TestChallengeIgnoresOtherResponses(t *testing.T) {
	c := newTestClient(t, newFakeRS(t, newFakeAS(t)), nil)
	for _, resp := range []*http.Response{
		nil,
		{StatusCode: 500, Header: http.Header{}},
		{StatusCode: 403, Header: http.Header{}},
		{StatusCode: 403, Header: http.Header{"Www-Authenticate": {`Bearer error="invalid_token"`}}},
	} {
		retry, err := c.Challenge(context.Background(), resp)
		if retry || err != nil {
			t.Errorf("Challenge(%v) = %v, %v; want false, nil", resp, retry, err)
		}
	}
}

// TestRacedRetryIsBounded: a transport whose requests never carry the
// current token (here: no Request on the response) cannot loop forever.
func TestRacedRetryIsBounded(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	resp := &http.Response{StatusCode: 401, Header: http.Header{"Www-Authenticate": {`Bearer`}}}
	for i := 0; ; i++ {
		retry, err := c.Challenge(ctxT(t), resp)
		if err != nil {
			break
		}
		if !retry || i > 50 {
			t.Fatalf("round %d: retry=%v", i, retry)
		}
	}
	req, _ := http.NewRequest("POST", "https://elsewhere.example/mcp", nil)
	resp.Request = req
	for i := 0; ; i++ {
		retry, err := c.Challenge(ctxT(t), resp)
		if err != nil {
			break
		}
		if !retry || i > 50 {
			t.Fatalf("other origin, round %d: retry=%v", i, retry)
		}
	}
}

func TestRelativeResourceMetadata(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	rs.prm = "path"
	inner := rs.srv.Config.Handler
	rs.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" && r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="/.well-known/oauth-protected-resource/mcp"`)
			w.WriteHeader(401)
			return
		}
		inner.ServeHTTP(w, r)
	})
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
}

// TestIssWithoutMetadata: with no metadata document there is no recorded
// issuer; iss is then not compared (the state still is).
func TestIssWithoutMetadata(t *testing.T) {
	as := newFakeAS(t)
	rs := newFakeRS(t, as)
	c := newTestClient(t, rs, nil)
	if err := c.checkIss("https://as.example", &ServerMetadata{Issuer: "https://mcp.example"}); err != nil {
		t.Errorf("no metadata: %v", err)
	}
	if err := c.checkIss("https://as.example", &ServerMetadata{Issuer: "https://mcp.example", URL: "https://mcp.example/.well-known/oauth-authorization-server"}); !errors.Is(err, ErrIssMismatch) {
		t.Errorf("with metadata: %v, want ErrIssMismatch", err)
	}
}
