package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
)

// DPoP (RFC 9449): sender-constrained tokens. The client proves, with a
// key pair of its own, that it is the one the token was issued to: every
// token request and every request to the server carries a fresh proof JWT
// (ES256) in the DPoP header, signed with that key; the access token is
// bound to the key's thumbprint and presented as "Authorization: DPoP".
// A stolen token is useless without the key.
//
// One key per credential: a new key for each token obtained by a grant,
// kept (in the token store, beside the token) for as long as that token
// and its refresh token live, since both are bound to it.

// DPoP modes (Config.DPoP, the oauth dpop option).
const (
	// DPoPAuto, the default: DPoP when the server requires it, by a
	// challenge with the DPoP scheme and no Bearer one, or
	// dpop_bound_access_tokens_required in its Protected Resource Metadata.
	DPoPAuto = "auto"
	// DPoPOn: proofs on every token request; the token is used with the
	// DPoP scheme when the authorization server binds it (token_type
	// DPoP), as a bearer token otherwise.
	DPoPOn = "on"
	// DPoPOff: never; a server that requires DPoP gets an error.
	DPoPOff = "off"
)

// DPoPModes are the values of the dpop option.
var DPoPModes = []string{DPoPAuto, DPoPOn, DPoPOff}

// dpopAlg is the one proof algorithm Nexus signs with; RFC 9449 servers
// must support a set that in practice always includes it.
const dpopAlg = "ES256"

// maxNonceOrigins bounds the origins whose nonces are kept.
const maxNonceOrigins = 64

// maxNonce bounds a server-supplied DPoP nonce (RFC 9449 allows any
// NQCHAR string; real ones are short).
const maxNonce = 512

// dpopKey is the key pair of one credential.
type dpopKey struct {
	priv *ecdsa.PrivateKey
	jwk  map[string]string // public key as a JWK, the proof header's jwk
}

func newDPoPKey() (*dpopKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return dpopKeyOf(k)
}

func dpopKeyOf(k *ecdsa.PrivateKey) (*dpopKey, error) {
	pub, err := k.PublicKey.ECDH()
	if err != nil {
		return nil, err
	}
	b := pub.Bytes() // 0x04 || X || Y
	if len(b) != 65 {
		return nil, errors.New("unexpected P-256 public key length")
	}
	enc := base64.RawURLEncoding.EncodeToString
	return &dpopKey{priv: k, jwk: map[string]string{"kty": "EC", "crv": "P-256", "x": enc(b[1:33]), "y": enc(b[33:])}}, nil
}

// encode is the key as stored: PKCS #8 PEM.
func (k *dpopKey) encode() (string, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.priv)
	if err != nil {
		return "", err
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), nil
}

func decodeDPoPKey(s string) (*dpopKey, error) {
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, errors.New("the stored DPoP key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("the stored DPoP key is not a P-256 key")
	}
	return dpopKeyOf(ec)
}

// thumbprint is the RFC 7638 JWK thumbprint (what a token's cnf.jkt holds).
func (k *dpopKey) thumbprint() string {
	j := `{"crv":"` + k.jwk["crv"] + `","kty":"EC","x":"` + k.jwk["x"] + `","y":"` + k.jwk["y"] + `"}`
	sum := sha256.Sum256([]byte(j))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// htu is the proof's target URI: the request URI without query and
// fragment (RFC 9449 section 4.2).
func htu(u *url.URL) string {
	v := *u
	v.RawQuery, v.Fragment, v.RawFragment, v.User = "", "", "", nil
	return v.String()
}

// proof is a DPoP proof JWT for one request: a fresh jti, the method and
// target, the time, the server's nonce when it gave one, and for a request
// that presents an access token, ath, the token's hash.
func (k *dpopKey) proof(method string, target *url.URL, nonce, accessToken string, now int64) (string, error) {
	jti, err := randomString(16)
	if err != nil {
		return "", err
	}
	claims := jwt.MapClaims{"jti": jti, "htm": method, "htu": htu(target), "iat": now}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	t := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	t.Header["typ"] = "dpop+jwt"
	t.Header["jwk"] = k.jwk
	return t.SignedString(k.priv)
}

// proofNonce reads the nonce claim of a proof this client made, without
// verifying it (it only tells which nonce a rejected request carried).
func proofNonce(proof string) string {
	parts := strings.Split(proof, ".")
	if len(parts) != 3 || len(parts[1]) > 4096 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Nonce string `json:"nonce"`
	}
	json.Unmarshal(b, &c)
	return c.Nonce
}

// ---- nonces ----------------------------------------------------------------

// nonceFrom is a response's DPoP-Nonce, if it is one this client will
// send back (bounded, visible ASCII only).
func nonceFrom(h http.Header) string {
	n := h.Get("DPoP-Nonce")
	if n == "" || len(n) > maxNonce {
		return ""
	}
	for i := 0; i < len(n); i++ {
		if n[i] < 0x21 || n[i] > 0x7e || n[i] == '"' || n[i] == '\\' {
			return ""
		}
	}
	return n
}

func (c *Client) nonce(origin string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nonces[origin]
}

func (c *Client) setNonce(origin, n string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.nonces) >= maxNonceOrigins {
		clear(c.nonces) // a handful of origins in practice; never unbounded
	}
	c.nonces[origin] = n
}

// ---- token requests ---------------------------------------------------------

// dpopTransport adds a proof to each token request it carries and notes
// the nonce the authorization server sends back.
type dpopTransport struct {
	c    *Client
	key  *dpopKey
	base http.RoundTripper
}

func (t *dpopTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	o := origin(req.URL)
	p, err := t.key.proof(req.Method, req.URL, t.c.nonce(o), "", t.c.now().Unix())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("DPoP", p)
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		if n := nonceFrom(resp.Header); n != "" {
			t.c.setNonce(o, n)
		}
	}
	return resp, err
}

// tokenCtx is the context x/oauth2 makes a token request in: c's HTTP
// client, wrapped to add DPoP proofs with key when key is set.
func (c *Client) tokenCtx(ctx context.Context, key *dpopKey) context.Context {
	hc := c.hc
	if key != nil {
		base := c.hc.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		cp := *c.hc
		cp.Transport = &dpopTransport{c: c, key: key, base: base}
		hc = &cp
	}
	return context.WithValue(ctx, oauth2.HTTPClient, hc)
}

// withNonceRetry runs a token request and, when the authorization server
// answers use_dpop_nonce with a nonce (RFC 9449 section 8), runs it once
// more: the transport has recorded the nonce by then.
func withNonceRetry[T any](key *dpopKey, do func() (T, error)) (T, error) {
	v, err := do()
	var re *oauth2.RetrieveError
	if key != nil && errors.As(err, &re) && re.ErrorCode == "use_dpop_nonce" && re.Response != nil && nonceFrom(re.Response.Header) != "" {
		return do()
	}
	return v, err
}

// dpopFor decides whether a new grant at d.as uses DPoP and returns its
// new key (nil: bearer). An error when the server requires DPoP and the
// config or the authorization server rules it out.
func (c *Client) dpopFor(d *discovered) (*dpopKey, error) {
	required := c.dpopRequired() || (d.prm != nil && d.prm.DPoPBoundAccessTokensRequired)
	switch {
	case c.cfg.DPoP == DPoPOff && required:
		return nil, c.failWith(&Error{Kind: ErrDPoP, Op: "obtain a token", URL: orDefault(d.as.URL, d.as.Issuer),
			Description: "the server requires DPoP-bound tokens and this server's oauth block sets dpop = \"off\""})
	case c.cfg.DPoP == DPoPOff, c.cfg.DPoP != DPoPOn && !required:
		return nil, nil
	}
	if algs := d.as.DPoPSigningAlgValuesSupported; len(algs) > 0 && !contains(algs, dpopAlg) {
		if !required {
			c.log.Debug("the authorization server does not accept ES256 DPoP proofs; using bearer tokens", "algs", algs)
			return nil, nil
		}
		return nil, c.failWith(&Error{Kind: ErrDPoP, Op: "obtain a token", URL: orDefault(d.as.URL, d.as.Issuer),
			Description: "the server requires DPoP-bound tokens but the authorization server accepts proofs signed with " +
				strings.Join(algs, ", ") + " only, and Nexus signs with " + dpopAlg})
	}
	k, err := newDPoPKey()
	if err != nil {
		return nil, c.failWith(&Error{Kind: ErrDPoP, Op: "create a DPoP key", Err: err})
	}
	return k, nil
}

func (c *Client) dpopRequired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dpopNeeded
}

// keyOf is the DPoP key a stored token is bound to (nil: a bearer token).
// The last one decoded is kept, so requests do not parse it each time.
func (c *Client) keyOf(t *storedToken) *dpopKey {
	if t == nil || t.DPoPKey == "" {
		return nil
	}
	c.mu.Lock()
	if c.key.pem == t.DPoPKey {
		k := c.key.key
		c.mu.Unlock()
		return k
	}
	c.mu.Unlock()
	k, err := decodeDPoPKey(t.DPoPKey)
	if err != nil {
		c.log.Warn("ignoring the stored DPoP key", "error", err)
		return nil
	}
	c.mu.Lock()
	c.key.pem, c.key.key = t.DPoPKey, k
	c.mu.Unlock()
	return k
}

// bind records key in st (the key the token was requested with).
func bind(st *storedToken, key *dpopKey) error {
	if key == nil {
		return nil
	}
	s, err := key.encode()
	if err != nil {
		return fmt.Errorf("cannot keep the DPoP key: %w", err)
	}
	st.DPoPKey = s
	return nil
}

// usesDPoP: the token is presented with the DPoP scheme. An authorization
// server that ignored the proof issues a bearer token (token_type Bearer),
// which is presented as such.
func (t *storedToken) usesDPoP() bool {
	return t.DPoPKey != "" && strings.EqualFold(t.TokenType, "DPoP")
}
