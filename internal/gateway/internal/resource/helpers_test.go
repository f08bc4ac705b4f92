package resource

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const testResource = "https://gw.example.com/mcp"

// Keys are made once per test binary: RSA generation is slow.
var (
	rsaKey   = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	rsaOther = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 2048)) })
	rsaWeak  = sync.OnceValue(func() *rsa.PrivateKey { return must(rsa.GenerateKey(rand.Reader, 1024)) })
	ecP256   = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)) })
	ecP384   = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)) })
	ecP521   = sync.OnceValue(func() *ecdsa.PrivateKey { return must(ecdsa.GenerateKey(elliptic.P521(), rand.Reader)) })
	edKey    = sync.OnceValue(func() ed25519.PrivateKey {
		_, k, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	})
)

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// clock is a settable clock shared by the validator and the tokens.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// jwkOf renders pub as a JWK.
func jwkOf(kid string, pub crypto.PublicKey) map[string]any {
	enc := base64.RawURLEncoding.EncodeToString
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return map[string]any{"kty": "RSA", "kid": kid, "use": "sig", "n": enc(p.N.Bytes()), "e": enc(big.NewInt(int64(p.E)).Bytes())}
	case *ecdsa.PublicKey:
		b := must(p.Bytes()) // 0x04 || x || y
		size := (len(b) - 1) / 2
		return map[string]any{"kty": "EC", "kid": kid, "crv": p.Curve.Params().Name, "x": enc(b[1 : 1+size]), "y": enc(b[1+size:])}
	case ed25519.PublicKey:
		return map[string]any{"kty": "OKP", "kid": kid, "crv": "Ed25519", "x": enc(p)}
	}
	panic("unknown key type")
}

// fakeIssuer is an authorization server on loopback: metadata and a key
// set, with knobs for misbehaving.
type fakeIssuer struct {
	srv  *httptest.Server
	path string // the issuer's own path, "" or "/tenant1"

	mu           sync.Mutex
	keys         []map[string]any
	metaPaths    map[string]bool // the well-known paths that serve metadata
	metaIssuer   string          // the metadata's issuer; "" = the real one
	metaBody     string          // served as the metadata instead, when set
	cacheControl string
	jwksStatus   int
	jwksBody     []byte           // served instead of the keys, when set
	gate         chan struct{}    // the key set waits for it to close, when set
	keysHandler  http.HandlerFunc // serves the key set instead, when set
	requests     []string

	jwksFetches atomic.Int32
	abandoned   atomic.Int32 // key set requests whose client went away
}

func newIssuer(t testing.TB, path string) *fakeIssuer {
	is := &fakeIssuer{path: path, metaPaths: map[string]bool{}}
	is.metaPaths["/.well-known/oauth-authorization-server"+path] = true
	is.srv = httptest.NewServer(http.HandlerFunc(is.serve))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *fakeIssuer) URL() string     { return is.srv.URL + is.path }
func (is *fakeIssuer) JWKSURL() string { return is.srv.URL + "/keys" }

func (is *fakeIssuer) add(kid string, pub crypto.PublicKey) {
	is.mu.Lock()
	is.keys = append(is.keys, jwkOf(kid, pub))
	is.mu.Unlock()
}

func (is *fakeIssuer) set(f func(is *fakeIssuer)) {
	is.mu.Lock()
	f(is)
	is.mu.Unlock()
}

func (is *fakeIssuer) requested() []string {
	is.mu.Lock()
	defer is.mu.Unlock()
	return append([]string(nil), is.requests...)
}

func (is *fakeIssuer) serve(w http.ResponseWriter, r *http.Request) {
	is.mu.Lock()
	is.requests = append(is.requests, r.URL.Path)
	is.mu.Unlock()
	if r.URL.Path == "/keys" {
		is.serveKeys(w, r)
		return
	}
	is.mu.Lock()
	ok, iss, body := is.metaPaths[r.URL.Path], is.metaIssuer, is.metaBody
	is.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if body != "" {
		w.Write([]byte(strings.ReplaceAll(body, "ISSUER", is.URL())))
		return
	}
	if iss == "" {
		iss = is.URL()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": is.JWKSURL(), "token_endpoint": is.srv.URL + "/token"})
}

func (is *fakeIssuer) serveKeys(w http.ResponseWriter, r *http.Request) {
	is.jwksFetches.Add(1)
	is.mu.Lock()
	gate, status, body, cc, h := is.gate, is.jwksStatus, is.jwksBody, is.cacheControl, is.keysHandler
	doc, _ := json.Marshal(map[string]any{"keys": is.keys})
	is.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			is.abandoned.Add(1)
			return
		}
	}
	if status != 0 {
		w.WriteHeader(status)
		return
	}
	if cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	if body != nil {
		doc = body
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}

// newValidator makes a Validator for is on clk.
func newValidator(t testing.TB, is *fakeIssuer, clk *clock, mod ...func(*Config)) *Validator {
	t.Helper()
	cfg := Config{
		Resource:   testResource,
		Issuer:     is.URL(),
		Agents:     map[string]string{"alice": "claude", "bob": "cursor"},
		HTTPClient: is.srv.Client(),
		Now:        clk.Now,
	}
	for _, m := range mod {
		m(&cfg)
	}
	v, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// claims are a good token's claims at clk's time, changed by mod.
func claims(is *fakeIssuer, clk *clock, mod ...func(jwt.MapClaims)) jwt.MapClaims {
	now := clk.Now()
	c := jwt.MapClaims{
		"iss": is.URL(),
		"aud": testResource,
		"sub": "alice",
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
	for _, m := range mod {
		if m != nil {
			m(c)
		}
	}
	return c
}

// sign makes a token; kid "" leaves the header without one.
func sign(t testing.TB, m jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// refusal asserts that err is an *Error with status, code and a
// description containing want.
func refusal(t testing.TB, err error, status int, code string, want ...string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *Error (%d %s), got %T: %v", status, code, err, err)
	}
	if e.Status != status || e.Code != code {
		t.Errorf("got %d %q, want %d %q: %s", e.Status, e.Code, status, code, e.Description)
	}
	for _, w := range want {
		if !strings.Contains(e.Description, w) {
			t.Errorf("description %q lacks %q", e.Description, w)
		}
	}
	return e
}

func agent(v *Validator, tok string) (string, error) {
	return v.Agent(context.Background(), tok)
}
