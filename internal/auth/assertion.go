package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// assertionSigner signs private_key_jwt client assertions (RFC 7523
// section 2.2) with the configured key.
type assertionSigner struct {
	key    any
	method jwt.SigningMethod
	kid    string
}

// assertionLifetime is how long a client assertion is valid.
const assertionLifetime = 5 * time.Minute

func newAssertionSigner(pemBytes []byte, alg, kid string) (*assertionSigner, error) {
	key, err := parsePrivateKey(pemBytes)
	if err != nil {
		return nil, err
	}
	if alg == "" {
		alg, err = defaultAlg(key)
		if err != nil {
			return nil, err
		}
	}
	m := jwt.GetSigningMethod(alg)
	if m == nil || alg == "none" || strings.HasPrefix(alg, "HS") {
		return nil, fmt.Errorf("unsupported signing algorithm %q (use ES256, ES384, ES512, RS256, PS256 or EdDSA)", alg)
	}
	s := &assertionSigner{key: key, method: m, kid: kid}
	// Sign once now, so a key that does not fit the algorithm is a config
	// error rather than a failure at the first token request.
	if _, err := s.clientAssertion("check", []string{"check"}, time.Now()); err != nil {
		return nil, fmt.Errorf("the key cannot sign %s: %v", alg, err)
	}
	return s, nil
}

// parsePrivateKey reads a PEM private key: PKCS #8, PKCS #1 (RSA) or SEC 1
// (EC).
func parsePrivateKey(b []byte) (any, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block found (expected -----BEGIN PRIVATE KEY-----)")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("unsupported private key in PEM block %q (expected PKCS #8, PKCS #1 or SEC 1)", block.Type)
}

func defaultAlg(key any) (string, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", nil
		case elliptic.P384():
			return "ES384", nil
		case elliptic.P521():
			return "ES512", nil
		}
		return "", errors.New("unsupported elliptic curve")
	case *rsa.PrivateKey:
		return "RS256", nil
	case ed25519.PrivateKey:
		return "EdDSA", nil
	}
	return "", fmt.Errorf("unsupported key type %T", key)
}

// clientAssertion is a signed JWT with iss and sub the client id, aud the
// authorization server (its issuer and token endpoint, so that either
// convention verifies), a five-minute lifetime and a random jti.
func (s *assertionSigner) clientAssertion(clientID string, aud []string, now time.Time) (string, error) {
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	claims := jwt.MapClaims{
		"iss": clientID,
		"sub": clientID,
		"iat": now.Unix(),
		"exp": now.Add(assertionLifetime).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	}
	if len(aud) == 1 {
		claims["aud"] = aud[0]
	} else {
		claims["aud"] = aud
	}
	t := jwt.NewWithClaims(s.method, claims)
	if s.kid != "" {
		t.Header["kid"] = s.kid
	}
	return t.SignedString(s.key)
}
