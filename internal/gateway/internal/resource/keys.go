package resource

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"
)

// Limits on a key set.
const (
	maxKeys    = 100  // entries in a set
	minRSABits = 2048 // weaker RSA keys are skipped
	maxRSABits = 8192 // bigger ones would make every check slow
)

// key is one usable verification key of a set.
type key struct {
	kid string
	alg string // the JWK's alg, "" when it names none
	pub crypto.PublicKey
}

// keySet is a fetched, parsed key set.
type keySet struct {
	keys    []key
	url     string
	fetched time.Time
	expires time.Time
}

// describe names a key's type for messages.
func describe(pub crypto.PublicKey) string {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("an RSA key (%d bits)", p.N.BitLen())
	case *ecdsa.PublicKey:
		return "an EC " + p.Curve.Params().Name + " key"
	case ed25519.PublicKey:
		return "an Ed25519 key"
	}
	return "a key"
}

// fits reports whether pub can verify alg: RSA for RS* and PS*, ECDSA of
// the algorithm's own curve for ES*, Ed25519 for EdDSA.
func fits(pub crypto.PublicKey, alg string) bool {
	switch p := pub.(type) {
	case *rsa.PublicKey:
		return strings.HasPrefix(alg, "RS") || strings.HasPrefix(alg, "PS")
	case *ecdsa.PublicKey:
		switch alg {
		case "ES256":
			return p.Curve == elliptic.P256()
		case "ES384":
			return p.Curve == elliptic.P384()
		case "ES512":
			return p.Curve == elliptic.P521()
		}
	case ed25519.PublicKey:
		return alg == "EdDSA"
	}
	return false
}

// pick chooses the key for a token's kid and alg. Without a kid, the set's
// only key that fits alg is used. ok false with a reason: none fits.
func (s *keySet) pick(kid, alg string) (k key, reason string, ok bool) {
	var found []key
	var wrongType []string
	for _, k := range s.keys {
		if kid != "" && k.kid != kid {
			continue
		}
		if k.alg != "" && k.alg != alg {
			wrongType = append(wrongType, fmt.Sprintf("%s for %s only", describe(k.pub), k.alg))
			continue
		}
		if !fits(k.pub, alg) {
			wrongType = append(wrongType, describe(k.pub))
			continue
		}
		found = append(found, k)
	}
	switch {
	case len(found) == 1 || (kid != "" && len(found) > 1):
		return found[0], "", true
	case len(found) > 1:
		return key{}, fmt.Sprintf("the access token has no key id (kid) and the key set at %s holds %d keys for %s; the authorization server must put kid in its tokens' header", s.url, len(found), alg), false
	case kid != "" && len(wrongType) > 0:
		return key{}, fmt.Sprintf("the access token is signed with %s, but its key %q in %s is %s", alg, quoteValue(kid), s.url, strings.Join(wrongType, ", ")), false
	case kid == "":
		return key{}, fmt.Sprintf("the access token has no key id (kid) and the key set at %s holds no key for %s", s.url, alg), false
	}
	return key{}, fmt.Sprintf("the access token's key id %q is not in the key set at %s", quoteValue(kid), s.url), false
}

// jwk is the part of a JSON Web Key (RFC 7517, RFC 7518, RFC 8037) that
// verification needs.
type jwk struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Alg    string   `json:"alg"`
	Crv    string   `json:"crv"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
}

// parseJWKS reads a JSON Web Key Set's public signature keys. Keys for
// encryption, of other types, or too weak are skipped; a set with no usable
// key is an error that says why each key was skipped.
func parseJWKS(b []byte) ([]key, error) {
	var set struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("it is not a JSON Web Key Set: %s", jsonProblem(b, err))
	}
	if set.Keys == nil {
		return nil, errors.New(`it is JSON but not a JSON Web Key Set: it has no "keys" array (is this the issuer's metadata rather than its jwks_uri?)`)
	}
	if len(*set.Keys) > maxKeys {
		return nil, fmt.Errorf("it holds %d keys, over the limit of %d", len(*set.Keys), maxKeys)
	}
	var keys []key
	var skipped []string
	for i, raw := range *set.Keys {
		var k jwk
		if err := json.Unmarshal(raw, &k); err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d: %v", i, err))
			continue
		}
		pub, err := k.public()
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("key %d (kid %q): %v", i, quoteValue(k.Kid), err))
			continue
		}
		if pub == nil {
			continue // not for signatures
		}
		keys = append(keys, key{kid: k.Kid, alg: k.Alg, pub: pub})
	}
	if len(keys) == 0 {
		msg := "it holds no usable signature key (RSA of 2048 to 8192 bits, EC P-256/P-384/P-521, Ed25519)"
		if len(skipped) > 3 {
			skipped = append(skipped[:3], fmt.Sprintf("and %d more", len(skipped)-3))
		}
		if len(skipped) > 0 {
			msg += ": " + strings.Join(skipped, "; ")
		}
		return nil, errors.New(msg)
	}
	return keys, nil
}

// public decodes the key; nil, nil for a key that is not for signatures.
func (k *jwk) public() (crypto.PublicKey, error) {
	if k.Use != "" && k.Use != "sig" {
		return nil, nil
	}
	if len(k.KeyOps) > 0 && !slices.Contains(k.KeyOps, "verify") {
		return nil, nil
	}
	if k.Alg != "" && !slices.Contains(algorithms, k.Alg) {
		return nil, nil // for an algorithm the gateway refuses anyway
	}
	switch k.Kty {
	case "RSA":
		n, err := b64(k.N, "n")
		if err != nil {
			return nil, err
		}
		e, err := b64(k.E, "e")
		if err != nil {
			return nil, err
		}
		N, E := new(big.Int).SetBytes(n), new(big.Int).SetBytes(e)
		if bits := N.BitLen(); bits < minRSABits || bits > maxRSABits {
			return nil, fmt.Errorf("RSA modulus of %d bits (2048 to 8192 accepted)", bits)
		}
		if !E.IsInt64() || E.Int64() < 3 || E.Int64() > 1<<31-1 || E.Bit(0) == 0 {
			return nil, errors.New("RSA exponent is not an odd number from 3 to 2^31-1")
		}
		return &rsa.PublicKey{N: N, E: int(E.Int64())}, nil
	case "EC":
		var c elliptic.Curve
		switch k.Crv {
		case "P-256":
			c = elliptic.P256()
		case "P-384":
			c = elliptic.P384()
		case "P-521":
			c = elliptic.P521()
		default:
			return nil, fmt.Errorf("EC curve %q is not P-256, P-384 or P-521", quoteValue(k.Crv))
		}
		x, err := b64(k.X, "x")
		if err != nil {
			return nil, err
		}
		y, err := b64(k.Y, "y")
		if err != nil {
			return nil, err
		}
		size := (c.Params().BitSize + 7) / 8
		if len(x) != size || len(y) != size {
			return nil, fmt.Errorf("EC coordinates of %d and %d bytes; %s needs %d", len(x), len(y), k.Crv, size)
		}
		// The parse checks that the point is on the curve.
		pub, err := ecdsa.ParseUncompressedPublicKey(c, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("EC point: %v", err)
		}
		return pub, nil
	case "OKP":
		if k.Crv != "Ed25519" {
			return nil, fmt.Errorf("OKP curve %q is not Ed25519", quoteValue(k.Crv))
		}
		x, err := b64(k.X, "x")
		if err != nil {
			return nil, err
		}
		if len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("Ed25519 key of %d bytes; it needs %d", len(x), ed25519.PublicKeySize)
		}
		return ed25519.PublicKey(x), nil
	case "oct":
		return nil, nil // a shared secret: never for a resource server
	case "":
		return nil, errors.New(`no "kty"`)
	}
	return nil, fmt.Errorf("key type %q is not RSA, EC or OKP", quoteValue(k.Kty))
}

// b64 decodes a base64url member (RFC 7515: no padding; some issuers pad
// anyway, which is tolerated).
func b64(s, member string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("no %q", member)
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return nil, fmt.Errorf("%q is not base64url: %v", member, err)
	}
	return b, nil
}

// jsonProblem says where a document stopped being JSON and what it seems
// to be instead.
func jsonProblem(b []byte, err error) string {
	s := strings.TrimSpace(string(b))
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	where := err.Error()
	if errors.As(err, &syn) {
		where = fmt.Sprintf("%v at byte %d", syn, syn.Offset)
	} else if errors.As(err, &typ) {
		where = fmt.Sprintf("%s is a JSON %s, not the expected %v", fieldName(typ.Field), typ.Value, typ.Type)
	}
	switch {
	case s == "":
		return "the body is empty"
	case strings.HasPrefix(s, "<"):
		return where + " (the body is HTML or XML: a login page, a proxy's error page, or the wrong URL)"
	}
	return where
}

func fieldName(f string) string {
	if f == "" {
		return "the document"
	}
	return `"` + f + `"`
}
