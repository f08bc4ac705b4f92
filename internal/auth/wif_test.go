package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// workloadJWT is what a platform would issue the workload.
func workloadJWT(t *testing.T, k *ecdsa.PrivateKey, aud string, exp time.Duration, sub string) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://idp.conformance-test.local", "sub": sub, "aud": aud,
		"iat": time.Now().Unix(), "exp": time.Now().Add(exp).Unix(),
	}).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wifSetup(t *testing.T) (*fakeAS, *fakeRS, *ecdsa.PrivateKey) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := newFakeAS(t)
	as.workloadKey = &k.PublicKey
	as.noDCR = true
	as.grantTypes = []string{grantJWTBearer}
	rs := newFakeRS(t, as)
	return as, rs, k
}

// TestWorkloadIdentity is auth/wif-jwt-bearer: the workload's JWT is the
// grant (grant_type jwt-bearer, assertion, resource, the client id when
// configured, no secret), read afresh from its file for each token.
func TestWorkloadIdentity(t *testing.T) {
	as, rs, k := wifSetup(t)
	as.expiresIn = 120
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(workloadJWT(t, k, as.issuer(), time.Hour, "w1")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var later atomic.Int64
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant, cfg.ClientID, cfg.AssertionFile = GrantJWTBearer, "conformance-wif-workload", file
		cfg.now = func() time.Time { return time.Now().Add(time.Duration(later.Load())) }
	})
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, regs, _ := as.snapshot()
	if len(authz)+len(regs) != 0 || len(toks) != 1 {
		t.Fatalf("%d authorize, %d register, %d token requests; want only one token request", len(authz), len(regs), len(toks))
	}
	f := toks[0].form
	if f.Get("grant_type") != grantJWTBearer || f.Get("resource") != rs.url() || f.Get("client_id") != "conformance-wif-workload" ||
		f.Has("client_secret") || toks[0].hasBasic || !strings.HasPrefix(f.Get("assertion"), "ey") {
		t.Errorf("token request %v", f)
	}

	// The platform rotates the file; the next token uses the new JWT.
	next := workloadJWT(t, k, as.issuer(), time.Hour, "w2")
	if err := os.WriteFile(file, []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	later.Store(int64(100 * time.Second))
	mustCall(t, c, rs.url())
	_, toks, _, _ = as.snapshot()
	if len(toks) != 2 || toks[1].form.Get("assertion") != next {
		t.Errorf("%d token requests; the renewal did not read the rotated file", len(toks))
	}
}

// TestWorkloadIdentityRefused: a refused grant is reported with the
// authorization server's error, once: no retry, no other grant.
func TestWorkloadIdentityRefused(t *testing.T) {
	cases := []struct {
		name, aud, scope, oauthErr string
		exp                        time.Duration
	}{
		{"expired", "", "", "invalid_grant", -time.Minute},
		{"wrong-audience", "https://wrong.example", "", "invalid_grant", time.Hour},
		{"scope", "", "wif.rejected", "invalid_scope", time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as, rs, k := wifSetup(t)
			aud := tc.aud
			if aud == "" {
				aud = as.issuer()
			}
			jwt := workloadJWT(t, k, aud, tc.exp, "w")
			c := newTestClient(t, rs, func(cfg *Config) {
				cfg.Grant, cfg.Assertion = GrantJWTBearer, jwt
				if tc.scope != "" {
					cfg.Scopes = []string{tc.scope}
				}
			})
			_, err := call(t, ctxT(t), c, rs.url())
			var e *Error
			if !errors.Is(err, ErrTokenEndpoint) || !errors.As(err, &e) || e.OAuthError != tc.oauthErr {
				t.Fatalf("error %v, want the token endpoint's %s", err, tc.oauthErr)
			}
			authz, toks, regs, _ := as.snapshot()
			if len(toks) != 1 || len(authz)+len(regs) != 0 {
				t.Errorf("%d token, %d authorize, %d register requests; want one token request only", len(toks), len(authz), len(regs))
			}
			if toks[0].form.Has("client_id") {
				t.Error("client_id sent although none is configured")
			}
			if tc.name == "expired" {
				checkGolden(t, "wif_refused", err, names(rs, as)...)
			}
		})
	}
}

// TestWorkloadIdentityConfig: no JWT is a config error at New; a file
// that holds no JWT is one at the first token, naming the file.
func TestWorkloadIdentityConfig(t *testing.T) {
	_, rs, _ := wifSetup(t)
	if _, err := New(Config{ServerURL: rs.url(), NoStore: true, Grant: GrantJWTBearer}); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "assertion_file") {
		t.Fatalf("error %v, want ErrConfig naming the options", err)
	}
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte("not a jwt"), 0o600)
	c := newTestClient(t, rs, func(cfg *Config) { cfg.Grant, cfg.AssertionFile = GrantJWTBearer, file })
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), file) {
		t.Fatalf("error %v, want ErrConfig naming %s", err, file)
	}
	big := filepath.Join(t.TempDir(), "big")
	os.WriteFile(big, []byte(strings.Repeat("a", maxAssertion+1)), 0o600)
	c = newTestClient(t, rs, func(cfg *Config) { cfg.Grant, cfg.AssertionFile = GrantJWTBearer, big })
	if _, err := call(t, ctxT(t), c, rs.url()); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("error %v, want the size limit", err)
	}
}
