package resource

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzParseJWKS feeds key sets from outside to the parser: it must never
// panic, and what it accepts must be usable keys. The seed corpus is in
// testdata/fuzz/FuzzParseJWKS.
func FuzzParseJWKS(f *testing.F) {
	for _, k := range []any{&rsaKey().PublicKey, &ecP256().PublicKey, &ecP384().PublicKey, &ecP521().PublicKey, edKey().Public()} {
		b, _ := json.Marshal(map[string]any{"keys": []any{jwkOf("k", k)}})
		f.Add(b)
	}
	f.Add([]byte(`{"keys":[]}`))
	f.Add([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		keys, err := parseJWKS(b)
		if (err == nil) != (len(keys) > 0) {
			t.Fatalf("err %v with %d keys", err, len(keys))
		}
		if len(keys) > maxKeys {
			t.Fatalf("%d keys", len(keys))
		}
		for _, k := range keys {
			usable := false
			for _, alg := range algorithms {
				usable = usable || fits(k.pub, alg)
			}
			if !usable {
				t.Fatalf("accepted %T that fits no algorithm", k.pub)
			}
			switch p := k.pub.(type) {
			case *rsa.PublicKey:
				if p.N.BitLen() < minRSABits || p.N.BitLen() > maxRSABits || p.E < 3 || p.E%2 == 0 {
					t.Fatalf("accepted RSA key of %d bits, e=%d", p.N.BitLen(), p.E)
				}
			case *ecdsa.PublicKey:
				b, err := p.Bytes()
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ecdsa.ParseUncompressedPublicKey(p.Curve, b); err != nil {
					t.Fatalf("accepted a point that does not parse back: %v", err)
				}
			case ed25519.PublicKey:
				if len(p) != ed25519.PublicKeySize {
					t.Fatal("accepted a short Ed25519 key")
				}
			}
		}
	})
}

// FuzzClaims feeds claim sets (as a verified token would carry them) to the
// scope and agent-claim readers.
func FuzzClaims(f *testing.F) {
	f.Add([]byte(`{"sub":"alice","scope":"a b","scp":["c","d e"]}`), "sub")
	f.Add([]byte(`{"groups":["eng",7,null,{"x":1},"ops"],"scp":"x"}`), "groups")
	f.Add([]byte(`{"sub":12345678901234567890,"scope":null}`), "sub")
	f.Add([]byte(`{"sub":"*","scope":"\t\n"}`), "sub")
	v, err := New(Config{Resource: testResource, Issuer: "https://login.example.com",
		Scopes: []string{"a", "c"}, Agents: map[string]string{"alice": "claude", "eng": "eng-agent"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte, claim string) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var c jwt.MapClaims
		if d.Decode(&c) != nil {
			return
		}
		for s := range scopesOf(c) {
			if s == "" || strings.ContainsAny(s, " \t\n\r") {
				t.Fatalf("scope %q", s)
			}
		}
		missingScopes(c, v.cfg.Scopes)
		for _, s := range claimStrings(c[claim]) {
			if s == "" {
				t.Fatal("an empty claim value")
			}
		}
		w, err := New(Config{Resource: testResource, Issuer: "https://login.example.com", AgentClaim: claim, Agents: v.cfg.Agents})
		if err != nil {
			t.Fatal(err)
		}
		a, err := w.agentFor(c)
		var e *Error
		if (a == "") == (err == nil) || (err != nil && (!errors.As(err, &e) || e.Status != 403)) {
			t.Fatalf("agent %q, err %v", a, err)
		}
	})
}

// FuzzToken feeds tokens to Agent with a key set already in the cache and
// no network: it must never panic, and every refusal must be an *Error.
func FuzzToken(f *testing.F) {
	clk := newClock()
	v, err := New(Config{Resource: testResource, Issuer: "https://login.example.com", Agents: map[string]string{"*": "claude"},
		Now: clk.Now, HTTPClient: &http.Client{Transport: failing{}}})
	if err != nil {
		f.Fatal(err)
	}
	v.set = &keySet{url: "https://login.example.com/keys", fetched: clk.Now(), expires: clk.Now().Add(time.Hour), keys: []key{
		{kid: "rsa", pub: &rsaKey().PublicKey}, {kid: "ec", pub: &ecP256().PublicKey}, {kid: "ed", pub: edKey().Public()},
	}}
	v.lastFetch = clk.Now()
	c := jwt.MapClaims{"iss": "https://login.example.com", "aud": testResource, "sub": "x", "exp": clk.Now().Add(time.Hour).Unix()}
	good := sign(f, jwt.SigningMethodES256, ecP256(), "ec", c)
	f.Add(good)
	f.Add(sign(f, jwt.SigningMethodEdDSA, edKey(), "", c))
	f.Add(sign(f, jwt.SigningMethodRS256, rsaKey(), "rsa", c))
	f.Add(sign(f, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, "rsa", c))
	f.Add(good[:len(good)-3] + "AAA")
	f.Add("eyJhbGciOiJFUzI1NiIsImtpZCI6WzFdfQ.e30.AA")
	f.Fuzz(func(t *testing.T, tok string) {
		a, err := v.Agent(context.Background(), tok)
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("not a refusal: %T %v", err, err)
		}
		if err == nil && a != "claude" {
			t.Fatalf("agent %q", a)
		}
	})
}

type failing struct{}

func (failing) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("no network in fuzzing")
}
