package resource

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestValidTokensMapToAgents(t *testing.T) {
	is := newIssuer(t, "")
	is.add("rsa", &rsaKey().PublicKey)
	is.add("p256", &ecP256().PublicKey)
	is.add("p384", &ecP384().PublicKey)
	is.add("p521", &ecP521().PublicKey)
	is.add("ed", edKey().Public())
	clk := newClock()
	v := newValidator(t, is, clk)

	cases := []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
		sub    string
		agent  string
	}{
		{"RS256", jwt.SigningMethodRS256, rsaKey(), "rsa", "alice", "claude"},
		{"RS384", jwt.SigningMethodRS384, rsaKey(), "rsa", "bob", "cursor"},
		{"RS512", jwt.SigningMethodRS512, rsaKey(), "rsa", "alice", "claude"},
		{"PS256", jwt.SigningMethodPS256, rsaKey(), "rsa", "alice", "claude"},
		{"PS512", jwt.SigningMethodPS512, rsaKey(), "rsa", "bob", "cursor"},
		{"ES256", jwt.SigningMethodES256, ecP256(), "p256", "alice", "claude"},
		{"ES384", jwt.SigningMethodES384, ecP384(), "p384", "bob", "cursor"},
		{"ES512", jwt.SigningMethodES512, ecP521(), "p521", "alice", "claude"},
		{"EdDSA", jwt.SigningMethodEdDSA, edKey(), "ed", "bob", "cursor"},
		// Without a kid, the set's only key of the fitting type is used.
		{"EdDSA without kid", jwt.SigningMethodEdDSA, edKey(), "", "alice", "claude"},
		{"ES384 without kid", jwt.SigningMethodES384, ecP384(), "", "alice", "claude"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok := sign(t, c.method, c.key, c.kid, claims(is, clk, func(m jwt.MapClaims) { m["sub"] = c.sub }))
			got, err := agent(v, tok)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.agent {
				t.Fatalf("agent %q, want %q", got, c.agent)
			}
		})
	}
	if n := is.jwksFetches.Load(); n != 1 {
		t.Errorf("the key set was fetched %d times, want 1 (cached)", n)
	}
}

func TestAgentClaim(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", &ecP256().PublicKey)
	clk := newClock()
	tok := func(mod func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodES256, ecP256(), "k", claims(is, clk, mod))
	}

	groups := newValidator(t, is, clk, func(c *Config) {
		c.AgentClaim = "groups"
		c.Agents = map[string]string{"eng": "claude", "ops": "ops-agent"}
	})
	// The first value of the array that maps wins.
	got, err := agent(groups, tok(func(m jwt.MapClaims) { m["groups"] = []string{"sales", "ops", "eng"} }))
	if err != nil || got != "ops-agent" {
		t.Fatalf("groups: %q, %v", got, err)
	}
	got, err = agent(groups, tok(func(m jwt.MapClaims) { m["groups"] = "eng" }))
	if err != nil || got != "claude" {
		t.Fatalf("string groups: %q, %v", got, err)
	}
	_, err = agent(groups, tok(func(m jwt.MapClaims) { m["groups"] = []string{"sales"} }))
	refusal(t, err, 403, "insufficient_scope", "groups claim is [sales]", "maps to no agent", "add it to the oauth agents")
	_, err = agent(groups, tok(nil))
	refusal(t, err, 403, "insufficient_scope", "has no groups claim", "agent_claim")
	_, err = agent(groups, tok(func(m jwt.MapClaims) { m["groups"] = map[string]any{"eng": true} }))
	refusal(t, err, 403, "insufficient_scope", "has no groups claim")

	wild := newValidator(t, is, clk, func(c *Config) {
		c.Agents = map[string]string{"alice": "admin", "*": "guest"}
	})
	if got, err := agent(wild, tok(nil)); err != nil || got != "admin" {
		t.Fatalf("alice: %q, %v", got, err)
	}
	if got, err := agent(wild, tok(func(m jwt.MapClaims) { m["sub"] = "mallory" })); err != nil || got != "guest" {
		t.Fatalf("wildcard: %q, %v", got, err)
	}
	// The wildcard needs the claim to be there at all.
	_, err = agent(wild, tok(func(m jwt.MapClaims) { delete(m, "sub") }))
	refusal(t, err, 403, "insufficient_scope", "has no sub claim")

	// A claim value "*" is not the wildcard entry.
	strict := newValidator(t, is, clk, func(c *Config) { c.Agents = map[string]string{"*": "guest", "alice": "claude"} })
	if got, _ := agent(strict, tok(func(m jwt.MapClaims) { m["sub"] = "*" })); got != "guest" {
		t.Fatalf("a literal * maps through the wildcard, got %q", got)
	}
	only := newValidator(t, is, clk, func(c *Config) { c.Agents = map[string]string{"alice": "claude"} })
	_, err = agent(only, tok(func(m jwt.MapClaims) { m["sub"] = "*" }))
	refusal(t, err, 403, "insufficient_scope")
}

func TestScopes(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	clk := newClock()
	v := newValidator(t, is, clk, func(c *Config) { c.Scopes = []string{"mcp:tools", "mcp:read"} })
	tok := func(mod func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk, mod))
	}
	for name, mod := range map[string]func(jwt.MapClaims){
		"scope string":  func(m jwt.MapClaims) { m["scope"] = "openid mcp:read  mcp:tools" },
		"scp array":     func(m jwt.MapClaims) { m["scp"] = []string{"mcp:tools", "mcp:read"} },
		"scp string":    func(m jwt.MapClaims) { m["scp"] = "mcp:tools mcp:read" },
		"scope and scp": func(m jwt.MapClaims) { m["scope"] = "mcp:read"; m["scp"] = []string{"mcp:tools"} },
	} {
		if got, err := agent(v, tok(mod)); err != nil || got != "claude" {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	_, err := agent(v, tok(func(m jwt.MapClaims) { m["scope"] = "mcp:read" }))
	e := refusal(t, err, 403, "insufficient_scope", "lacks the scope mcp:tools")
	if e.Scope != "mcp:tools mcp:read" {
		t.Errorf("scope %q", e.Scope)
	}
	if h := e.WWWAuthenticate("https://m"); !strings.Contains(h, `scope="mcp:tools mcp:read"`) {
		t.Errorf("challenge %s", h)
	}
	_, err = agent(v, tok(nil))
	refusal(t, err, 403, "insufficient_scope", "mcp:read mcp:tools")
}

// TestRefusals covers every way a token is refused before it maps to an
// agent; the descriptions are pinned in testdata/refusals.golden.
func TestRefusals(t *testing.T) {
	is := newIssuer(t, "")
	is.add("rsa", &rsaKey().PublicKey)
	is.add("ec", &ecP256().PublicKey)
	clk := newClock()
	v := newValidator(t, is, clk)
	good := func(mod func(jwt.MapClaims)) string {
		return sign(t, jwt.SigningMethodRS256, rsaKey(), "rsa", claims(is, clk, mod))
	}
	now := clk.Now()

	pubDER, _ := x509.MarshalPKIXPublicKey(&rsaKey().PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})

	goodTok := good(nil)
	parts := strings.Split(goodTok, ".")
	otherPayload := strings.Split(good(func(m jwt.MapClaims) { m["sub"] = "bob" }), ".")[1]

	cases := []struct {
		name   string
		token  string
		status int
		code   string
		want   string
	}{
		{"no token", "", 401, "", "no access token"},
		{"oversized", strings.Repeat("a", MaxTokenBytes+1), 401, "invalid_token", "over the 8192-byte limit"},
		{"opaque", "2YotnFZFEjr1zCsicMWpAA", 401, "invalid_token", "not a JWT"},
		{"encrypted", "a.b.c.d.e", 401, "invalid_token", "encrypted JWT"},
		{"bad base64", "e30.!!!.c2ln", 401, "invalid_token", "malformed"},
		{"alg none", sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa", claims(is, clk)), 401, "invalid_token", `algorithm is "none" (an unsigned token)`},
		{"HS256 with the public key as secret", sign(t, jwt.SigningMethodHS256, pubPEM, "rsa", claims(is, clk)), 401, "invalid_token", `algorithm is "HS256"`},
		{"HS256 with the modulus as secret", sign(t, jwt.SigningMethodHS256, rsaKey().N.Bytes(), "", claims(is, clk)), 401, "invalid_token", `algorithm is "HS256"`},
		{"signed by another key", sign(t, jwt.SigningMethodRS256, rsaOther(), "rsa", claims(is, clk)), 401, "invalid_token", "signature does not verify"},
		{"payload swapped", parts[0] + "." + otherPayload + "." + parts[2], 401, "invalid_token", "signature does not verify"},
		{"RSA key for ES256", sign(t, jwt.SigningMethodES256, ecP256(), "rsa", claims(is, clk)), 401, "invalid_token", "is an RSA key"},
		{"crit header", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(is, clk))
			tok.Header["kid"], tok.Header["crit"] = "rsa", []string{"exp"}
			return must(tok.SignedString(rsaKey()))
		}(), 401, "invalid_token", "critical extensions"},
		{"expired", good(func(m jwt.MapClaims) { m["exp"] = now.Add(-2 * time.Minute).Unix() }), 401, "invalid_token", "expired at"},
		{"no exp", good(func(m jwt.MapClaims) { delete(m, "exp") }), 401, "invalid_token", "no expiry"},
		{"not yet valid", good(func(m jwt.MapClaims) { m["nbf"] = now.Add(5 * time.Minute).Unix() }), 401, "invalid_token", "not valid before"},
		{"issued in the future", good(func(m jwt.MapClaims) { m["iat"] = now.Add(5 * time.Minute).Unix() }), 401, "invalid_token", "issued in the future"},
		{"wrong issuer", good(func(m jwt.MapClaims) { m["iss"] = "https://evil.example.com" }), 401, "invalid_token", "issued by"},
		{"issuer with a trailing slash", good(func(m jwt.MapClaims) { m["iss"] = is.URL() + "/" }), 401, "invalid_token", "trailing slash"},
		{"no issuer", good(func(m jwt.MapClaims) { delete(m, "iss") }), 401, "invalid_token", "no issuer"},
		{"wrong audience", good(func(m jwt.MapClaims) { m["aud"] = "https://other.example.com/mcp" }), 401, "invalid_token", "RFC 8707 resource parameter"},
		{"wrong audiences", good(func(m jwt.MapClaims) { m["aud"] = []string{"a", "b"} }), 401, "invalid_token", "token audience is [a b]"},
		{"audience with a trailing slash", good(func(m jwt.MapClaims) { m["aud"] = testResource + "/" }), 401, "invalid_token", "differ only in a trailing slash"},
		{"no alg", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(is, clk))
			s := must(tok.SignedString(rsaKey()))
			return base64.RawURLEncoding.EncodeToString([]byte(`{"kid":"rsa"}`)) + s[strings.Index(s, "."):]
		}(), 401, "invalid_token", "names no signature algorithm"},
		{"no audience", good(func(m jwt.MapClaims) { delete(m, "aud") }), 401, "invalid_token", "no audience"},
		{"exp not a number", good(func(m jwt.MapClaims) { m["exp"] = "tomorrow" }), 401, "invalid_token", "exp claim is a string"},
		{"nbf an object", good(func(m jwt.MapClaims) { m["nbf"] = map[string]int{"a": 1} }), 401, "invalid_token", "nbf claim has the wrong type"},
	}
	var golden strings.Builder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := agent(v, c.token)
			e := refusal(t, err, c.status, c.code, c.want)
			golden.WriteString(c.name + ": " + e.Description + "\n")
		})
	}
	got := strings.ReplaceAll(golden.String(), is.srv.URL, "http://issuer.test")
	checkGolden(t, "refusals.golden", got)

	// Within the leeway, and with the audience among others, it passes.
	for name, mod := range map[string]func(jwt.MapClaims){
		"expired within leeway":   func(m jwt.MapClaims) { m["exp"] = now.Add(-30 * time.Second).Unix() },
		"nbf within leeway":       func(m jwt.MapClaims) { m["nbf"] = now.Add(30 * time.Second).Unix() },
		"audience among others":   func(m jwt.MapClaims) { m["aud"] = []string{"https://other", testResource} },
		"iat within leeway":       func(m jwt.MapClaims) { m["iat"] = now.Add(30 * time.Second).Unix() },
		"no iat and no nbf (ok)":  func(m jwt.MapClaims) { delete(m, "iat") },
		"padded claims base64 ok": nil,
	} {
		if _, err := agent(v, good(mod)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestConfiguredAudience(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	clk := newClock()
	v := newValidator(t, is, clk, func(c *Config) { c.Audience = "api://nexus" })
	tok := sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk, func(m jwt.MapClaims) { m["aud"] = "api://nexus" }))
	if _, err := agent(v, tok); err != nil {
		t.Fatal(err)
	}
	_, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)))
	refusal(t, err, 401, "invalid_token", "the gateway is api://nexus")
}

func TestNoKidAmbiguous(t *testing.T) {
	is := newIssuer(t, "")
	is.add("a", &rsaKey().PublicKey)
	is.add("b", &rsaOther().PublicKey)
	clk := newClock()
	v := newValidator(t, is, clk)
	_, err := agent(v, sign(t, jwt.SigningMethodRS256, rsaKey(), "", claims(is, clk)))
	refusal(t, err, 401, "invalid_token", "no key id (kid)", "holds 2 keys for RS256")
}

func TestKeyRotation(t *testing.T) {
	is := newIssuer(t, "")
	is.add("old", &rsaKey().PublicKey)
	clk := newClock()
	v := newValidator(t, is, clk)
	if _, err := agent(v, sign(t, jwt.SigningMethodRS256, rsaKey(), "old", claims(is, clk))); err != nil {
		t.Fatal(err)
	}
	is.add("new", &ecP256().PublicKey)
	clk.Add(refetchGap)
	// The unknown kid makes exactly one refetch, which finds it.
	if _, err := agent(v, sign(t, jwt.SigningMethodES256, ecP256(), "new", claims(is, clk))); err != nil {
		t.Fatal(err)
	}
	if n := is.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	// Both keys now verify without fetching.
	for i := 0; i < 3; i++ {
		if _, err := agent(v, sign(t, jwt.SigningMethodRS256, rsaKey(), "old", claims(is, clk))); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
}

func TestRefetchRateLimit(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", &ecP256().PublicKey)
	clk := newClock()
	v := newValidator(t, is, clk)
	bogus := func(kid string) string { return sign(t, jwt.SigningMethodES256, ecP256(), kid, claims(is, clk)) }

	// The first token fetches the set; a bogus kid right after does not
	// fetch again.
	_, err := agent(v, bogus("nope"))
	refusal(t, err, 401, "invalid_token", `key id "nope" is not in the key set`, ", fetched just now")
	if n := is.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
	clk.Add(time.Second)
	// A flood of bogus kids, concurrently, within the gap: no fetch.
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := agent(v, bogus(strings.Repeat("x", i+1)))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		refusal(t, err, 401, "invalid_token", "fetches them again in 29s")
	}
	if n := is.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches after the flood, want 1", n)
	}
	// After the gap, one more fetch, and the gap starts again.
	clk.Add(refetchGap)
	for range 5 {
		agent(v, bogus("again"))
	}
	if n := is.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches after the gap, want 2", n)
	}
}

func TestCacheExpiry(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", &ecP256().PublicKey)
	is.set(func(is *fakeIssuer) { is.cacheControl = "public, max-age=120" })
	clk := newClock()
	v := newValidator(t, is, clk)
	tok := func() string { return sign(t, jwt.SigningMethodES256, ecP256(), "k", claims(is, clk)) }
	agent(v, tok())
	clk.Add(119 * time.Second)
	agent(v, tok())
	if n := is.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches within max-age, want 1", n)
	}
	clk.Add(2 * time.Second)
	if _, err := agent(v, tok()); err != nil {
		t.Fatal(err)
	}
	if n := is.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches after max-age, want 2", n)
	}
}

func TestCacheTTL(t *testing.T) {
	for cc, want := range map[string]time.Duration{
		"":                        defaultTTL,
		"max-age=600":             10 * time.Minute,
		"public, max-age=3600":    time.Hour,
		"max-age=5":               minTTL,
		"max-age=999999999999999": maxTTL,
		"max-age=86401":           maxTTL,
		`max-age="300"`:           5 * time.Minute,
		"MAX-AGE=120":             2 * time.Minute,
		"max-age=-1":              defaultTTL,
		"max-age=abc":             defaultTTL,
		"no-store":                minTTL,
		"no-cache, max-age=3600":  minTTL,
		"private":                 defaultTTL,
	} {
		h := http.Header{}
		if cc != "" {
			h.Set("Cache-Control", cc)
		}
		if got := cacheTTL(h); got != want {
			t.Errorf("%q: %v, want %v", cc, got, want)
		}
	}
}

func TestConcurrentValidationsShareOneFetch(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	gate := make(chan struct{})
	is.set(func(is *fakeIssuer) { is.gate = gate })
	clk := newClock()
	v := newValidator(t, is, clk)
	tok := sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk))

	const n = 40
	errs := make(chan error, n)
	for range n {
		go func() { _, err := agent(v, tok); errs <- err }()
	}
	// Wait until the one fetch is in flight and everyone is queued on it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		v.mu.Lock()
		w := 0
		if v.flight != nil {
			w = v.flight.waiters
		}
		v.mu.Unlock()
		if w == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters on the fetch, want %d", w, n)
		}
		time.Sleep(time.Millisecond)
	}
	close(gate)
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := is.jwksFetches.Load(); got != 1 {
		t.Fatalf("%d fetches, want 1", got)
	}
}

func TestHangingKeySetHonoursContext(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	is.set(func(is *fakeIssuer) { is.gate = make(chan struct{}) }) // never opens
	clk := newClock()
	v := newValidator(t, is, clk)
	tok := sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk))

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := v.Agent(ctx, tok)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want the context's deadline, got %T %v", err, err)
	}
	var e *Error
	if errors.As(err, &e) {
		t.Fatalf("a fetch that did not finish is not a refusal of the token: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Agent took %v after its context ended", d)
	}
	// The fetch is abandoned, not left running: the issuer sees the
	// request go away.
	waitFor(t, func() bool { return is.abandoned.Load() == 1 })
	// A caller that gave up does not count as the issuer failing: the next
	// one fetches at once.
	is.set(func(is *fakeIssuer) { is.gate = nil })
	if _, err := agent(v, tok); err != nil {
		t.Fatal(err)
	}
}

func TestHangingKeySetTimesOut(t *testing.T) {
	old := fetchTimeout
	fetchTimeout = 150 * time.Millisecond
	t.Cleanup(func() { fetchTimeout = old })
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	is.set(func(is *fakeIssuer) { is.gate = make(chan struct{}) })
	clk := newClock()
	v := newValidator(t, is, clk)
	_, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)))
	if err == nil || !strings.Contains(err.Error(), "no answer within 150ms") || !strings.Contains(err.Error(), is.JWKSURL()) {
		t.Fatalf("got %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOversizedKeySet(t *testing.T) {
	big := []byte(`{"keys":[],"pad":"` + strings.Repeat("x", MaxDocumentBytes) + `"}`)
	for _, chunked := range []bool{false, true} {
		is := newIssuer(t, "")
		if chunked {
			// No Content-Length: the cap applies while reading.
			is.set(func(is *fakeIssuer) {
				is.keysHandler = func(w http.ResponseWriter, r *http.Request) {
					for i := 0; i < len(big); i += 64 << 10 {
						w.Write(big[i:min(i+64<<10, len(big))])
						w.(http.Flusher).Flush()
					}
				}
			})
		} else {
			is.set(func(is *fakeIssuer) { is.jwksBody = big })
		}
		clk := newClock()
		v := newValidator(t, is, clk)
		_, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)))
		var e *Error
		if err == nil || errors.As(err, &e) || !strings.Contains(err.Error(), "over the 1048576-byte limit") {
			t.Fatalf("chunked=%v: got %T %v", chunked, err, err)
		}
	}
}

func TestKeySetErrors(t *testing.T) {
	cases := []struct {
		name string
		set  func(is *fakeIssuer)
		want []string
	}{
		{"HTML", func(is *fakeIssuer) { is.jwksBody = []byte("<!DOCTYPE html><html>login</html>") }, []string{"/keys is unusable", "HTML", "login page"}},
		{"no keys member", func(is *fakeIssuer) { is.jwksBody = []byte(`{"issuer":"x"}`) }, []string{`no "keys" array`}},
		{"keys not an array", func(is *fakeIssuer) { is.jwksBody = []byte(`{"keys":{}}`) }, []string{`"keys" is a JSON object`}},
		{"weak key", func(is *fakeIssuer) {
			b, _ := json.Marshal(map[string]any{"keys": []any{jwkOf("weak", &rsaWeak().PublicKey)}})
			is.jwksBody = b
		}, []string{"no usable signature key", `kid "weak"`, "1024 bits"}},
		{"HTTP 500", func(is *fakeIssuer) { is.jwksStatus = 500 }, []string{"answered HTTP 500", "tries again later"}},
		{"HTTP 404", func(is *fakeIssuer) { is.jwksStatus = 404 }, []string{"answered HTTP 404", "check the URL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := newIssuer(t, "")
			is.add("k", edKey().Public())
			is.set(c.set)
			clk := newClock()
			v := newValidator(t, is, clk)
			_, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)))
			var e *Error
			if err == nil || errors.As(err, &e) {
				t.Fatalf("want a fetch error, got %T %v", err, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func TestIssuerDown(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	clk := newClock()
	v := newValidator(t, is, clk)
	tok := func() string { return sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)) }
	if _, err := agent(v, tok()); err != nil {
		t.Fatal(err)
	}
	// The set expires while the issuer fails: its keys still serve.
	is.set(func(is *fakeIssuer) { is.jwksStatus = 503 })
	clk.Add(defaultTTL + time.Second)
	for range 10 {
		if _, err := agent(v, tok()); err != nil {
			t.Fatalf("a stale key should serve while the issuer is down: %v", err)
		}
	}
	// One failed fetch, then none until failureGap has passed.
	if n := is.jwksFetches.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}
	clk.Add(failureGap)
	agent(v, tok())
	if n := is.jwksFetches.Load(); n != 3 {
		t.Fatalf("%d fetches, want 3", n)
	}

	// Without any set, the failure is reported (not as a refusal) and
	// remembered for failureGap.
	is2 := newIssuer(t, "")
	is2.set(func(is *fakeIssuer) { is.jwksStatus = 503 })
	v2 := newValidator(t, is2, clk)
	for range 5 {
		_, err := agent(v2, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is2, clk)))
		var e *Error
		if err == nil || errors.As(err, &e) || !strings.Contains(err.Error(), "HTTP 503") {
			t.Fatalf("got %T %v", err, err)
		}
	}
	if n := is2.jwksFetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1", n)
	}
}

func TestDiscovery(t *testing.T) {
	cases := []struct {
		name    string
		path    string
		serveAt string   // the one well-known path that has metadata
		tried   []string // the paths requested before the key set
	}{
		{"RFC 8414", "", "/.well-known/oauth-authorization-server",
			[]string{"/.well-known/oauth-authorization-server"}},
		{"OpenID", "", "/.well-known/openid-configuration",
			[]string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"}},
		{"path, RFC 8414 insertion", "/tenant1", "/.well-known/oauth-authorization-server/tenant1",
			[]string{"/.well-known/oauth-authorization-server/tenant1"}},
		{"path, OpenID insertion", "/tenant1", "/.well-known/openid-configuration/tenant1",
			[]string{"/.well-known/oauth-authorization-server/tenant1", "/.well-known/openid-configuration/tenant1"}},
		{"path, OpenID appended", "/realms/corp", "/realms/corp/.well-known/openid-configuration",
			[]string{"/.well-known/oauth-authorization-server/realms/corp", "/.well-known/openid-configuration/realms/corp", "/realms/corp/.well-known/openid-configuration"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := newIssuer(t, c.path)
			is.add("k", edKey().Public())
			is.set(func(is *fakeIssuer) { is.metaPaths = map[string]bool{c.serveAt: true} })
			clk := newClock()
			v := newValidator(t, is, clk)
			if _, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk))); err != nil {
				t.Fatal(err)
			}
			want := append(c.tried, "/keys")
			if got := is.requested(); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("requested %v, want %v", got, want)
			}
			// Later fetches go straight to the key set.
			clk.Add(refetchGap)
			agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "other", claims(is, clk)))
			if got := is.requested(); got[len(got)-1] != "/keys" || len(got) != len(want)+1 {
				t.Fatalf("refetch requested %v", got)
			}
		})
	}
}

func TestDiscoveryFailures(t *testing.T) {
	is := newIssuer(t, "/tenant1")
	is.set(func(is *fakeIssuer) { is.metaPaths = map[string]bool{} })
	clk := newClock()
	v := newValidator(t, is, clk)
	_, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)))
	for _, w := range []string{"cannot find", "/.well-known/oauth-authorization-server/tenant1 answered HTTP 404", "/tenant1/.well-known/openid-configuration answered HTTP 404", "set jwks_url"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("%v lacks %q", err, w)
		}
	}

	// Metadata of another issuer is not used (RFC 8414 section 3.3).
	is2 := newIssuer(t, "")
	is2.add("k", edKey().Public())
	is2.set(func(is *fakeIssuer) { is.metaIssuer = "https://evil.example.com" })
	v2 := newValidator(t, is2, clk)
	_, err = agent(v2, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is2, clk)))
	if err == nil || !strings.Contains(err.Error(), `metadata of issuer "https://evil.example.com"`) {
		t.Fatalf("got %v", err)
	}
	if n := is2.jwksFetches.Load(); n != 0 {
		t.Fatalf("the key set of a mismatched issuer was fetched")
	}

	// A configured jwks_url skips discovery.
	is3 := newIssuer(t, "")
	is3.add("k", edKey().Public())
	v3 := newValidator(t, is3, clk, func(c *Config) { c.JWKSURL = is3.JWKSURL() })
	if _, err := agent(v3, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is3, clk))); err != nil {
		t.Fatal(err)
	}
	if got := is3.requested(); len(got) != 1 || got[0] != "/keys" {
		t.Fatalf("requested %v", got)
	}
}

func TestNew(t *testing.T) {
	ok := Config{Resource: "https://gw.example.com/mcp", Issuer: "https://login.example.com", Agents: map[string]string{"*": "a"}}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no resource", func(c *Config) { c.Resource = "" }, "oauth resource is required"},
		{"no issuer", func(c *Config) { c.Issuer = "" }, "oauth issuer is required"},
		{"http issuer", func(c *Config) { c.Issuer = "http://login.example.com" }, "requires https"},
		{"relative issuer", func(c *Config) { c.Issuer = "login.example.com" }, "not an absolute https URL"},
		{"issuer with query", func(c *Config) { c.Issuer = "https://login.example.com?x=1" }, "has a query"},
		{"issuer with fragment", func(c *Config) { c.Issuer = "https://login.example.com#x" }, "fragment"},
		{"issuer with user", func(c *Config) { c.Issuer = "https://u:p@login.example.com" }, "user information"},
		{"http resource", func(c *Config) { c.Resource = "http://gw.example.com/mcp" }, "requires https"},
		{"http jwks", func(c *Config) { c.JWKSURL = "http://login.example.com/keys" }, "oauth jwks_url"},
		{"no agents", func(c *Config) { c.Agents = nil }, "maps no claim value"},
		{"empty agent", func(c *Config) { c.Agents = map[string]string{"alice": ""} }, "non-empty"},
		{"bad scope", func(c *Config) { c.Scopes = []string{"a b"} }, "not a scope token"},
		{"negative leeway", func(c *Config) { c.Leeway = -time.Second }, "negative"},
	}
	for _, c := range cases {
		cfg := ok
		c.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	for _, loop := range []string{"http://127.0.0.1:8080", "http://localhost/x", "http://[::1]:9000"} {
		cfg := ok
		cfg.Issuer, cfg.Resource = loop, loop+"/mcp"
		if _, err := New(cfg); err != nil {
			t.Errorf("%s: %v", loop, err)
		}
	}
}

func TestWWWAuthenticate(t *testing.T) {
	cases := []struct {
		e    Error
		want string
	}{
		{Error{Status: 401, Description: "no access token"},
			`Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp"`},
		{Error{Status: 401, Code: "invalid_token", Description: `the "iss" is C:\evil` + "\r\nX-Injected: 1 é"},
			`Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp", error="invalid_token", error_description="the \"iss\" is C:\\evil  X-Injected: 1 ?"`},
		{Error{Status: 403, Code: "insufficient_scope", Description: "lacks scope", Scope: "a b"},
			`Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="lacks scope", scope="a b"`},
		{Error{Status: 403, Code: "insufficient_scope", Description: "no agent"},
			`Bearer resource_metadata="https://gw/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="no agent"`},
	}
	for _, c := range cases {
		if got := c.e.WWWAuthenticate("https://gw/.well-known/oauth-protected-resource/mcp"); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
	e := Error{Code: "invalid_token", Description: "x"}
	if got := e.WWWAuthenticate(""); got != `Bearer error="invalid_token", error_description="x"` {
		t.Errorf("without metadata: %s", got)
	}
	long := Error{Code: "invalid_token", Description: strings.Repeat("y", 5000)}
	if got := long.WWWAuthenticate(""); len(got) > 1200 {
		t.Errorf("challenge of %d bytes", len(got))
	}
	// Whatever the description, the header value is one line of ASCII.
	h := http.Header{}
	h.Set("WWW-Authenticate", (&Error{Code: "invalid_token", Description: "a\x00b\nc\u2028d\"\\"}).WWWAuthenticate("https://m"))
	for _, r := range h.Get("WWW-Authenticate") {
		if r < 0x20 || r > 0x7e {
			t.Fatalf("header carries %U", r)
		}
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -update rewrites it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestRediscoveryAfterKeySetFails(t *testing.T) {
	is := newIssuer(t, "")
	is.add("k", edKey().Public())
	clk := newClock()
	v := newValidator(t, is, clk)
	tok := func() string { return sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)) }
	if _, err := agent(v, tok()); err != nil {
		t.Fatal(err)
	}
	is.set(func(is *fakeIssuer) { is.jwksStatus = 404 })
	clk.Add(defaultTTL + time.Second)
	if _, err := agent(v, tok()); err != nil { // the stale key serves
		t.Fatal(err)
	}
	is.set(func(is *fakeIssuer) { is.jwksStatus = 0 })
	clk.Add(failureGap)
	if _, err := agent(v, tok()); err != nil {
		t.Fatal(err)
	}
	want := "/.well-known/oauth-authorization-server /keys /keys /.well-known/oauth-authorization-server /keys"
	if got := strings.Join(is.requested(), " "); got != want {
		t.Fatalf("requested %s\nwant      %s", got, want)
	}
}

func TestBadMetadata(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"not JSON":      {"<html>hi</html>", "is not JSON metadata: invalid character '<' looking for beginning of value at byte 1 (the body is HTML or XML"},
		"empty":         {" ", "the body is empty"},
		"wrong type":    {`{"issuer":"ISSUER","jwks_uri":7}`, `"jwks_uri" is a JSON number`},
		"no issuer":     {`{"jwks_uri":"https://x/keys"}`, "names no issuer"},
		"no jwks_uri":   {`{"issuer":"ISSUER"}`, "has no jwks_uri"},
		"http jwks_uri": {`{"issuer":"ISSUER","jwks_uri":"http://keys.example.com/keys"}`, "uses http"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			is := newIssuer(t, "")
			is.set(func(is *fakeIssuer) { is.metaBody = c.body })
			clk := newClock()
			v := newValidator(t, is, clk)
			_, err := agent(v, sign(t, jwt.SigningMethodEdDSA, edKey(), "k", claims(is, clk)))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "/.well-known/oauth-authorization-server") {
				t.Fatalf("got %v\nwant %q", err, c.want)
			}
		})
	}
}

func TestParseJWKSSkips(t *testing.T) {
	ed := base64.RawURLEncoding.EncodeToString(edKey().Public().(ed25519.PublicKey))
	doc := `{"keys":[
		{"kty":"oct","k":"c2VjcmV0"},
		{"kty":"OKP","crv":"Ed25519","x":"` + ed + `","use":"enc"},
		{"kty":"OKP","crv":"Ed25519","x":"` + ed + `","key_ops":["encrypt"]},
		{"kty":"OKP","crv":"Ed25519","x":"` + ed + `","alg":"HS256"},
		{"kty":"OKP","crv":"Ed25519","x":"` + ed + `","kid":"good","alg":"EdDSA"}]}`
	keys, err := parseJWKS([]byte(doc))
	if err != nil || len(keys) != 1 || keys[0].kid != "good" || keys[0].alg != "EdDSA" {
		t.Fatalf("%v %+v", err, keys)
	}
	// A key that names its algorithm verifies only that one.
	s := &keySet{keys: keys, url: "u"}
	if _, reason, ok := s.pick("good", "ES256"); ok || !strings.Contains(reason, "for EdDSA only") {
		t.Fatalf("%v %s", ok, reason)
	}
	for doc, want := range map[string]string{
		`{"keys":[{"kty":"EC","crv":"P-256","x":"AAAA","y":"AAAA"}]}`: "EC coordinates of 3 and 3 bytes",
		`{"keys":[{"kty":"EC","crv":"secp256k1"}]}`:                   `EC curve "secp256k1"`,
		`{"keys":[{"kty":"OKP","crv":"X448"}]}`:                       `OKP curve "X448"`,
		`{"keys":[{"kty":"OKP","crv":"Ed25519","x":"!"}]}`:            `"x" is not base64url`,
		`{"keys":[{"kty":"RSA","e":"AQAB"}]}`:                         `no "n"`,
		`{"keys":[{"n":"AQAB"}]}`:                                     `no "kty"`,
		`{"keys":[{"kty":"PQC"}]}`:                                    `key type "PQC"`,
		`{"keys":[1,2,3,4,5]}`:                                        "and 2 more",
		`{"keys":[` + strings.Repeat(`{},`, maxKeys) + `{}]}`:         "over the limit of 100",
	} {
		if _, err := parseJWKS([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v, want %q", doc, err, want)
		}
	}
}
