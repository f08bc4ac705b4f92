package jwtauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// issuer is a fake authorization server on loopback: metadata and a JWKS.
type issuer struct {
	path    string
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]crypto.Signer
	fetches atomic.Int32
	hang    chan struct{} // closed to release a hanging JWKS
}

func newIssuer(t *testing.T, path string) *issuer {
	is := &issuer{keys: map[string]crypto.Signer{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server"+path, func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]string{"issuer": is.url(), "jwks_uri": is.srv.URL + "/jwks"})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, r *http.Request) {
		is.fetches.Add(1)
		if is.hang != nil {
			select {
			case <-is.hang:
			case <-r.Context().Done():
			}
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		var keys []map[string]string
		for kid, k := range is.keys {
			keys = append(keys, jwk(kid, k.Public()))
		}
		json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	is.path = path
	return is
}

func (is *issuer) url() string { return is.srv.URL + is.path }

func (is *issuer) add(kid string, k crypto.Signer) {
	is.mu.Lock()
	is.keys[kid] = k
	is.mu.Unlock()
}

func jwk(kid string, pub crypto.PublicKey) map[string]string {
	enc := base64.RawURLEncoding.EncodeToString
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return map[string]string{"kty": "RSA", "kid": kid, "n": enc(p.N.Bytes()), "e": enc(bigE(p.E))}
	case *ecdsa.PublicKey:
		b, _ := p.Bytes()
		size := (len(b) - 1) / 2
		return map[string]string{"kty": "EC", "kid": kid, "crv": p.Curve.Params().Name, "x": enc(b[1 : 1+size]), "y": enc(b[1+size:])}
	case ed25519.PublicKey:
		return map[string]string{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": enc(p)}
	}
	return nil
}

func bigE(e int) []byte { return []byte{byte(e >> 16), byte(e >> 8), byte(e)} }

const resource = "https://nexus.example.com/mcp"

func sign(t *testing.T, method jwt.SigningMethod, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claims(is *issuer, sub string, extra ...any) jwt.MapClaims {
	c := jwt.MapClaims{"iss": is.url(), "aud": resource, "sub": sub, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return c
}

func validator(t *testing.T, is *issuer, mod func(*Config)) *Validator {
	cfg := Config{Resource: resource, Issuer: is.url(), Agents: map[string]string{"alice": "claude", "bob": "ci"}, HTTPClient: is.srv.Client()}
	if mod != nil {
		mod(&cfg)
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

func TestKeysAndClaims(t *testing.T) {
	is := newIssuer(t, "/tenant")
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, edk, _ := ed25519.GenerateKey(rand.Reader)
	is.add("rsa", rk)
	is.add("ec", ek)
	is.add("ed", edk)
	v := validator(t, is, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		method jwt.SigningMethod
		kid    string
		key    any
	}{
		{"RS256", jwt.SigningMethodRS256, "rsa", rk},
		{"PS256", jwt.SigningMethodPS256, "rsa", rk},
		{"ES256", jwt.SigningMethodES256, "ec", ek},
		{"EdDSA", jwt.SigningMethodEdDSA, "ed", edk},
	} {
		a, err := v.Agent(ctx, sign(t, c.method, c.kid, c.key, claims(is, "alice")))
		if err != nil || a != "claude" {
			t.Errorf("%s: %q %v", c.name, a, err)
		}
	}
	if is.fetches.Load() != 1 {
		t.Errorf("the key set was fetched %d times, want once (cached)", is.fetches.Load())
	}

	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(is, "alice"))
	hs.Header["kid"] = "rsa"
	pubDER, _ := x509.MarshalPKIXPublicKey(&rk.PublicKey)
	confused, _ := hs.SignedString(pubDER) // the public key as an HMAC secret
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, c := range []struct {
		name, token string
		status      int
		want        string
	}{
		{"expired", sign(t, jwt.SigningMethodRS256, "rsa", rk, claims(is, "alice", "exp", time.Now().Add(-time.Hour).Unix())), 401, "expired"},
		{"no exp", sign(t, jwt.SigningMethodRS256, "rsa", rk, jwt.MapClaims{"iss": is.url(), "aud": resource, "sub": "alice"}), 401, ""},
		{"not yet", sign(t, jwt.SigningMethodRS256, "rsa", rk, claims(is, "alice", "nbf", time.Now().Add(time.Hour).Unix())), 401, "not valid yet"},
		{"wrong issuer", sign(t, jwt.SigningMethodRS256, "rsa", rk, claims(is, "alice", "iss", "https://evil.example")), 401, "issued by"},
		{"wrong audience", sign(t, jwt.SigningMethodRS256, "rsa", rk, claims(is, "alice", "aud", "https://other.example/mcp")), 401, "RFC 8707"},
		{"bad signature", sign(t, jwt.SigningMethodRS256, "rsa", other, claims(is, "alice")), 401, "signature"},
		{"alg none", func() string {
			s, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims(is, "alice")).SignedString(jwt.UnsafeAllowNoneSignatureType)
			return s
		}(), 401, ""},
		{"HS256 with the public key", confused, 401, ""},
		{"unmapped subject", sign(t, jwt.SigningMethodRS256, "rsa", rk, claims(is, "mallory")), 403, "maps to no agent"},
		{"oversized", strings.Repeat("a", MaxToken+1), 401, "over"},
		{"garbage", "not.a.jwt", 401, ""},
	} {
		a, err := v.Agent(ctx, c.token)
		if err == nil || status(err) != c.status || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: agent %q, %v (status %d)", c.name, a, err, status(err))
		}
	}
}

func TestScopesAndClaims(t *testing.T) {
	is := newIssuer(t, "")
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.add("k", rk)
	v := validator(t, is, func(c *Config) {
		c.Scopes = []string{"mcp", "tools"}
		c.AgentClaim = "groups"
		c.Agents = map[string]string{"admins": "claude", "*": "readonly"}
	})
	ctx := context.Background()
	a, err := v.Agent(ctx, sign(t, jwt.SigningMethodRS256, "k", rk, claims(is, "x", "scope", "mcp tools other", "groups", []any{"staff", "admins"})))
	if err != nil || a != "claude" {
		t.Errorf("groups: %q %v", a, err)
	}
	a, err = v.Agent(ctx, sign(t, jwt.SigningMethodRS256, "k", rk, claims(is, "x", "scp", []any{"mcp", "tools"}, "groups", []any{"staff"})))
	if err != nil || a != "readonly" {
		t.Errorf("wildcard: %q %v", a, err)
	}
	_, err = v.Agent(ctx, sign(t, jwt.SigningMethodRS256, "k", rk, claims(is, "x", "scope", "mcp")))
	var e *Error
	if !errors.As(err, &e) || e.Status != 403 || e.Code != "insufficient_scope" || !strings.Contains(e.Description, "tools") {
		t.Fatalf("missing scope: %v", err)
	}
	if got := e.WWWAuthenticate(MetadataURL(resource)); got != `Bearer resource_metadata="https://nexus.example.com/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", error_description="the access token lacks the scope(s) tools", scope="mcp tools"` {
		t.Errorf("challenge %s", got)
	}
}

// An unknown kid fetches the set again (key rotation), but at most once
// per refetch gap, however many made-up kids arrive.
func TestRotationAndRefetchLimit(t *testing.T) {
	is := newIssuer(t, "")
	old, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.add("old", old)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	v := validator(t, is, func(c *Config) { c.Now = clock })
	ctx := context.Background()
	tok := func(kid string, k any) string {
		c := claims(is, "alice")
		c["iat"], c["exp"] = clock().Unix(), clock().Add(time.Hour).Unix()
		return sign(t, jwt.SigningMethodRS256, kid, k, c)
	}
	if _, err := v.Agent(ctx, tok("old", old)); err != nil {
		t.Fatal(err)
	}
	advance(time.Minute)
	fresh, _ := rsa.GenerateKey(rand.Reader, 2048)
	is.add("new", fresh)
	if _, err := v.Agent(ctx, tok("new", fresh)); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	before := is.fetches.Load()
	for i := range 50 {
		if _, err := v.Agent(ctx, tok(fmt.Sprintf("bogus-%d", i), fresh)); status(err) != 401 {
			t.Fatalf("bogus kid: %v", err)
		}
	}
	if n := is.fetches.Load() - before; n != 0 {
		t.Errorf("50 made-up kids within the gap fetched the set %d times", n)
	}
	advance(refetchGap)
	v.Agent(ctx, tok("bogus-again", fresh))
	if n := is.fetches.Load() - before; n != 1 {
		t.Errorf("after the gap: %d fetches, want 1", n)
	}
}

// A JWKS endpoint that hangs: the caller's context ends the wait.
func TestHangingIssuer(t *testing.T) {
	is := newIssuer(t, "")
	is.hang = make(chan struct{})
	defer close(is.hang)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	v := validator(t, is, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := v.Agent(ctx, sign(t, jwt.SigningMethodRS256, "k", rk, claims(is, "alice")))
		done <- err
	}()
	select {
	case err := <-done:
		if status(err) != 401 {
			t.Errorf("hanging issuer: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a hanging issuer hung the validation")
	}
}

func TestParseJWKS(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"not json", `{`, "not a JSON Web Key Set"},
		{"empty", `{"keys": []}`, "no usable signing key"},
		{"weak rsa", `{"keys": [{"kty": "RSA", "kid": "a", "n": "AQAB", "e": "AQAB"}]}`, "no usable signing key"},
		{"off curve", `{"keys": [{"kty": "EC", "crv": "P-256", "x": "` + strings.Repeat("A", 43) + `", "y": "` + strings.Repeat("A", 43) + `"}]}`, "no usable signing key"},
		{"encryption key", `{"keys": [{"kty": "OKP", "crv": "Ed25519", "use": "enc", "x": "` + strings.Repeat("A", 43) + `"}]}`, "no usable signing key"},
	} {
		if _, err := ParseJWKS([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func FuzzParseJWKS(f *testing.F) {
	f.Add([]byte(`{"keys": [{"kty": "RSA", "kid": "a", "n": "AQAB", "e": "AQAB"}]}`))
	f.Add([]byte(`{"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}`))
	f.Add([]byte(`{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return
		}
		keys, err := ParseJWKS(b)
		if err == nil && len(keys) == 0 {
			t.Fatal("no error and no keys")
		}
	})
}

func ExampleMetadataURL() {
	fmt.Println(MetadataURL("https://nexus.example.com/mcp"))
	fmt.Println(MetadataURL("https://nexus.example.com"))
	// Output:
	// https://nexus.example.com/.well-known/oauth-protected-resource/mcp
	// https://nexus.example.com/.well-known/oauth-protected-resource
}
