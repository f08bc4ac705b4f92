package auth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// dpopPair is an authorization server that supports DPoP (ES256) and a
// server that takes DPoP-bound tokens only, as in auth/dpop.
func dpopPair(t *testing.T) (*fakeAS, *fakeRS) {
	as := newFakeAS(t)
	as.dpopAlgs = []string{"ES256"}
	rs := newFakeRS(t, as)
	rs.dpopOnly = true
	return as, rs
}

// TestDPoP is auth/dpop: a server that challenges with the DPoP scheme
// gets a DPoP-bound token (a valid proof at the token endpoint), presented
// with the DPoP scheme and a fresh proof (new jti, ath) on every request.
func TestDPoP(t *testing.T) {
	as, rs := dpopPair(t)
	c := newTestClient(t, rs, nil)
	for i := 0; i < 3; i++ {
		mustCall(t, c, rs.url())
	}
	as.checkNoFailures() // the fakes verify every proof and refuse replays
	tok := c.token()
	if tok == nil || !tok.usesDPoP() || as.boundTo(tok.AccessToken) == "" {
		t.Fatalf("token %+v is not DPoP-bound", tok)
	}
	if as.dpopProofs != 1 {
		t.Errorf("%d proofs at the token endpoint, want 1", as.dpopProofs)
	}
	if key := c.keyOf(tok); key == nil || key.thumbprint() != as.boundTo(tok.AccessToken) {
		t.Error("the stored key is not the one the token is bound to")
	}
	if !c.Status().DPoP {
		t.Error("status does not say the token is DPoP-bound")
	}
}

// TestDPoPNonce is auth/dpop-nonce: use_dpop_nonce from the token
// endpoint and from the server are each answered by one retry with the
// nonce, which is then kept for later requests.
func TestDPoPNonce(t *testing.T) {
	as, rs := dpopPair(t)
	as.dpopNonce, rs.dpopNonce = "as-nonce-1", "rs-nonce-1"
	c := newTestClient(t, rs, nil)
	mustCall(t, c, rs.url())
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	authz, toks, _, _ := as.snapshot()
	if len(authz) != 1 || len(toks) != 2 {
		t.Errorf("%d logins and %d token requests, want 1 and 2 (one nonce retry)", len(authz), len(toks))
	}
	if as.nonceAsked != 1 || rs.nonceAsks != 1 {
		t.Errorf("nonce challenges: %d by the AS, %d by the server; want 1 each (the nonce is kept)", as.nonceAsked, rs.nonceAsks)
	}
}

// A server that hands out its next nonce on each success (RFC 9449
// section 8.2) is answered with it: one use_dpop_nonce in all, not one per
// rotation.
func TestDPoPNonceRotatedOnSuccess(t *testing.T) {
	_, rs := dpopPair(t)
	rs.dpopNonce, rs.rotateNonce = "rs-nonce-1", true
	c := newTestClient(t, rs, nil)
	for range 4 {
		mustCall(t, c, rs.url())
	}
	if rs.nonceAsks != 1 {
		t.Errorf("%d nonce challenges for 4 calls, want 1 (the nonce each success hands out is kept)", rs.nonceAsks)
	}
}

// TestDPoPNonceLoopIsBounded: a server that keeps refusing the nonce it
// handed out ends in ErrDPoP, not a loop.
func TestDPoPNonceLoopIsBounded(t *testing.T) {
	as, rs := dpopPair(t)
	rs.dpopNonce, rs.nonceAlways = "n", true
	c := newTestClient(t, rs, nil)
	_, err := call(t, ctxT(t), c, rs.url())
	if !errors.Is(err, ErrDPoP) {
		t.Fatalf("error %v, want ErrDPoP", err)
	}
	if rs.nonceAsks > nonceLoopLimit+2 {
		t.Errorf("%d nonce challenges answered", rs.nonceAsks)
	}
	checkGolden(t, "dpop_nonce_loop", err, names(rs, as)...)
}

// TestDPoPModes: auto uses DPoP only where the server requires it; on
// sends proofs to any authorization server; off refuses a server that
// requires it, with an error that says how to allow it.
func TestDPoPModes(t *testing.T) {
	t.Run("auto-not-required", func(t *testing.T) {
		as := newFakeAS(t)
		as.dpopAlgs = []string{"ES256"} // supported is not required
		rs := newFakeRS(t, as)
		c := newTestClient(t, rs, nil)
		mustCall(t, c, rs.url())
		if as.dpopProofs != 0 || c.token().usesDPoP() {
			t.Errorf("DPoP used although the server did not ask for it")
		}
	})
	t.Run("auto-prm-requires", func(t *testing.T) {
		as := newFakeAS(t)
		rs := newFakeRS(t, as)
		rs.prmDPoPRequired = true
		c := newTestClient(t, rs, nil)
		mustCall(t, c, rs.url())
		as.checkNoFailures()
		if as.dpopProofs != 1 || !c.token().usesDPoP() {
			t.Errorf("dpop_bound_access_tokens_required was ignored")
		}
	})
	t.Run("on", func(t *testing.T) {
		as := newFakeAS(t)
		rs := newFakeRS(t, as)
		c := newTestClient(t, rs, func(cfg *Config) { cfg.DPoP = DPoPOn })
		mustCall(t, c, rs.url())
		mustCall(t, c, rs.url())
		as.checkNoFailures()
		if !c.token().usesDPoP() {
			t.Error("dpop = on did not bind the token")
		}
	})
	t.Run("on-unbound", func(t *testing.T) {
		// An authorization server that ignores the proof issues a bearer
		// token, which is then presented as one.
		as := newFakeAS(t)
		as.dpopIgnore = true
		rs := newFakeRS(t, as)
		c := newTestClient(t, rs, func(cfg *Config) { cfg.DPoP = DPoPOn })
		mustCall(t, c, rs.url())
		if tok := c.token(); tok.usesDPoP() || tok.TokenType != "Bearer" {
			t.Errorf("token %+v", tok)
		}
	})
	t.Run("off-required", func(t *testing.T) {
		as, rs := dpopPair(t)
		c := newTestClient(t, rs, func(cfg *Config) { cfg.DPoP = DPoPOff })
		_, err := call(t, ctxT(t), c, rs.url())
		if !errors.Is(err, ErrDPoP) || !strings.Contains(Explain(err).Error(), `dpop = \"auto\"`) && !strings.Contains(Explain(err).Error(), `dpop = "auto"`) {
			t.Fatalf("error %v, want ErrDPoP with the fix", err)
		}
		if _, toks, _, _ := as.snapshot(); len(toks) != 0 {
			t.Errorf("%d token requests", len(toks))
		}
	})
	t.Run("alg-unsupported", func(t *testing.T) {
		as, rs := dpopPair(t)
		as.dpopAlgs = []string{"RS256"}
		c := newTestClient(t, rs, nil)
		if _, err := call(t, ctxT(t), c, rs.url()); !errors.Is(err, ErrDPoP) || !strings.Contains(Explain(err).Error(), "RS256") {
			t.Fatalf("error %v, want ErrDPoP naming the algorithms", err)
		}
	})
	t.Run("bad-mode", func(t *testing.T) {
		_, rs := dpopPair(t)
		if _, err := New(Config{ServerURL: rs.url(), NoStore: true, DPoP: "maybe"}); !errors.Is(err, ErrConfig) {
			t.Fatalf("error %v, want ErrConfig", err)
		}
	})
}

// TestDPoPRefreshAndStore: the key lives with the token: a refresh is
// proved with it (the refresh token is bound too), and a new process
// loading the store uses the token with the same key, without a login.
func TestDPoPRefreshAndStore(t *testing.T) {
	as, rs := dpopPair(t)
	as.alwaysRefresh, as.expiresIn = true, 120
	dir := t.TempDir()
	var later atomic.Int64
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.TokenDir = dir
		cfg.now = func() time.Time { return time.Now().Add(time.Duration(later.Load())) }
	})
	mustCall(t, c, rs.url())
	first := c.token()
	later.Store(int64(100 * time.Second)) // inside the refresh skew
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	_, toks, _, _ := as.snapshot()
	if last := toks[len(toks)-1].form; last.Get("grant_type") != "refresh_token" {
		t.Fatalf("last token request %v, want a refresh", last)
	}
	cur := c.token()
	if cur.AccessToken == first.AccessToken || cur.DPoPKey != first.DPoPKey || !cur.usesDPoP() {
		t.Error("the refreshed token is not bound to the same key")
	}

	c2 := newTestClient(t, rs, func(cfg *Config) {
		cfg.TokenDir = dir
		cfg.Opener = func(context.Context, string) error { return errors.New("no login expected") }
	})
	mustCall(t, c2, rs.url())
	as.checkNoFailures()
	if authz, _, _, _ := as.snapshot(); len(authz) != 1 {
		t.Errorf("%d logins, want the stored DPoP token used", len(authz))
	}
}

// TestDPoPClientCredentials: the non-interactive grants take the same
// path, nonce retry included.
func TestDPoPClientCredentials(t *testing.T) {
	as, rs := dpopPair(t)
	as.dpopNonce = "as-n"
	as.clients["cc"] = "s3cret"
	c := newTestClient(t, rs, func(cfg *Config) {
		cfg.Grant, cfg.ClientID, cfg.ClientSecret = GrantClientCredentials, "cc", "s3cret"
	})
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	if !c.token().usesDPoP() || as.nonceAsked != 1 {
		t.Errorf("bound %v, nonce challenges %d", c.token().usesDPoP(), as.nonceAsked)
	}
}

// TestProofShape checks a proof against RFC 9449 section 4.2 directly:
// htu without query or fragment, ath only with a token.
func TestProofShape(t *testing.T) {
	k, err := newDPoPKey()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "https://mcp.example/mcp?x=1#f", nil)
	p, err := k.proof(req.Method, req.URL, "n1", "tok", time.Now().Unix())
	if err != nil {
		t.Fatal(err)
	}
	jkt, nonce, err := verifyProof(p, http.MethodPost, "https://mcp.example/mcp", "tok")
	if err != nil || jkt != k.thumbprint() || nonce != "n1" {
		t.Fatalf("proof: jkt %q nonce %q err %v", jkt, nonce, err)
	}
	if proofNonce(p) != "n1" {
		t.Error("proofNonce")
	}
	s, err := k.encode()
	if err != nil {
		t.Fatal(err)
	}
	k2, err := decodeDPoPKey(s)
	if err != nil || k2.thumbprint() != k.thumbprint() {
		t.Fatalf("round trip: %v", err)
	}
	for _, n := range []string{"", strings.Repeat("a", maxNonce+1), "a b", "a\"b"} {
		h := http.Header{}
		h.Set("DPoP-Nonce", n)
		if nonceFrom(h) != "" {
			t.Errorf("nonce %q accepted", n)
		}
	}
}

// TestNonceChallengeNeedsProof: use_dpop_nonce to a request that carried
// no proof (a bearer token) is not a nonce retry: the client obtains a
// DPoP-bound token instead of looping.
func TestNonceChallengeNeedsProof(t *testing.T) {
	as, rs := dpopPair(t)
	c := newTestClient(t, rs, nil)
	req, _ := http.NewRequest(http.MethodPost, rs.url(), nil)
	req.Header.Set("Authorization", "Bearer old")
	resp := &http.Response{StatusCode: 401, Request: req, Header: http.Header{
		"Www-Authenticate": {`DPoP error="use_dpop_nonce"`}, "Dpop-Nonce": {"n1"}}}
	if _, handled, _ := c.dpopNonceChallenge(resp); handled {
		t.Fatal("a proof-less request was treated as a nonce retry")
	}
	mustCall(t, c, rs.url())
	as.checkNoFailures()
}

// TestDPoPLogin: nexus auth login against a DPoP-only server obtains a
// bound token at once (the probe's challenge says so).
func TestDPoPLogin(t *testing.T) {
	as, rs := dpopPair(t)
	c := newTestClient(t, rs, nil)
	if err := c.Login(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if tok := c.token(); tok == nil || !tok.usesDPoP() {
		t.Fatalf("token %+v after login, want DPoP-bound", tok)
	}
	mustCall(t, c, rs.url())
	as.checkNoFailures()
	if authz, _, _, _ := as.snapshot(); len(authz) != 1 {
		t.Errorf("%d logins, want 1", len(authz))
	}
}

// TestNonceInDualChallenge: a server that offers Bearer and DPoP puts
// use_dpop_nonce in its DPoP challenge; that is the one that counts.
func TestNonceInDualChallenge(t *testing.T) {
	_, rs := dpopPair(t)
	c := newTestClient(t, rs, nil)
	req, _ := http.NewRequest(http.MethodPost, rs.url(), nil)
	req.Header.Set("DPoP", "x.e30.y")
	resp := &http.Response{StatusCode: 401, Request: req, Header: http.Header{
		"Www-Authenticate": {`Bearer resource_metadata="x", DPoP error="use_dpop_nonce"`}, "Dpop-Nonce": {"n2"}}}
	retry, handled, err := c.dpopNonceChallenge(resp)
	if !retry || !handled || err != nil || c.nonce(origin(req.URL)) != "n2" {
		t.Fatalf("retry %v handled %v err %v nonce %q", retry, handled, err, c.nonce(origin(req.URL)))
	}
}

// BenchmarkAuthorizeDPoP is what DPoP adds to each request: one ES256
// signature (the key is decoded once).
func BenchmarkAuthorizeDPoP(b *testing.B) {
	k, _ := newDPoPKey()
	pemKey, _ := k.encode()
	c, err := New(Config{ServerURL: "https://mcp.example/mcp", NoStore: true})
	if err != nil {
		b.Fatal(err)
	}
	c.rec = &record{Token: &storedToken{AccessToken: "at", TokenType: "DPoP", DPoPKey: pemKey}}
	req, _ := http.NewRequest(http.MethodPost, "https://mcp.example/mcp", nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Authorize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
