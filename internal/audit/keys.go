package audit

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// The environment variables a key may come from when the audit block does
// not set it.
const (
	EnvKey        = "NEXUS_AUDIT_KEY"
	EnvSigningKey = "NEXUS_AUDIT_SIGNING_KEY"
)

// MinKey is the shortest HMAC key accepted: a short one can be guessed
// from the log itself.
const MinKey = 16

// Keys are the log's secrets and the public key that checks its
// checkpoints. None is ever written to the log, the checkpoints or a
// log line.
type Keys struct {
	MAC    []byte             // HMAC-SHA256 key of the chain; nil: unkeyed sha256
	Sign   ed25519.PrivateKey // signs checkpoints; nil: no checkpoints
	Public ed25519.PublicKey  // checks them: Sign's, or given alone to a verifier
}

// KeySource is where the keys are configured: the audit block's settings.
// An empty Key or SigningKey (and SigningKeyFile) falls back to EnvKey or
// EnvSigningKey.
type KeySource struct {
	Key            string // the HMAC key, as text (nexus audit keygen makes 32 random bytes in hex)
	SigningKey     string // base64 ed25519 seed
	SigningKeyFile string // a file holding SigningKey
	PublicKey      string // base64 ed25519 public key
	Getenv         func(string) string
}

// ConfigKeys loads the keys an audit block names (its settings, the
// signing key file, else EnvKey and EnvSigningKey): the host opens the log
// with them, and nexus audit verify checks it with the same.
func ConfigKeys(a *Block) (Keys, error) {
	return KeySource{Key: a.Key, SigningKey: a.SigningKey, SigningKeyFile: a.SigningKeyFile, PublicKey: a.PublicKey}.Load()
}

// Load reads the keys: from the settings, the key file, then the
// environment.
func (s KeySource) Load() (Keys, error) {
	var k Keys
	getenv := s.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	mac, from := s.Key, "the audit block's key"
	if mac == "" {
		mac, from = getenv(EnvKey), EnvKey
	}
	if mac != "" {
		if len(mac) < MinKey {
			return k, fmt.Errorf("%s is %d bytes; an HMAC key of fewer than %d can be guessed from the log: use 32 random bytes (nexus audit keygen prints one)", from, len(mac), MinKey)
		}
		k.MAC = []byte(mac)
	}
	seed, from := s.SigningKey, "the audit block's signing_key"
	if seed == "" && s.SigningKeyFile != "" {
		b, err := readSmall(s.SigningKeyFile, 4<<10)
		if err != nil {
			return k, fmt.Errorf("the audit block's signing_key_file: %w", err)
		}
		seed, from = strings.TrimSpace(string(b)), s.SigningKeyFile
	}
	if seed == "" {
		seed, from = getenv(EnvSigningKey), EnvSigningKey
	}
	if seed != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(seed))
		if err != nil || len(b) != ed25519.SeedSize {
			return k, fmt.Errorf("%s is not an ed25519 signing key (the base64 of a %d-byte seed); nexus audit keygen makes one", from, ed25519.SeedSize)
		}
		k.Sign = ed25519.NewKeyFromSeed(b)
		k.Public = k.Sign.Public().(ed25519.PublicKey)
	}
	if s.PublicKey != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.PublicKey))
		if err != nil || len(b) != ed25519.PublicKeySize {
			return k, fmt.Errorf("the audit block's public_key is not an ed25519 public key (the base64 of %d bytes); nexus audit keygen prints one", ed25519.PublicKeySize)
		}
		if k.Public != nil && !bytes.Equal(k.Public, b) {
			return k, errors.New("the audit block's public_key is not the signing key's: checkpoints signed with one would never verify with the other; drop public_key (it is derived from the signing key) or fix it")
		}
		k.Public = b
	}
	return k, nil
}

// readSmall reads a file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("%s is over %d bytes: not a key file", path, limit)
	}
	return b, err
}

// NewKeys makes a fresh HMAC key and ed25519 signing key, as text for
// the audit block: Key (64 hex digits), SigningKey (base64 seed) and
// PublicKey (base64).
func NewKeys() (key, signing, public string, err error) {
	mac := make([]byte, 32)
	seed := make([]byte, ed25519.SeedSize)
	if _, err = rand.Read(mac); err != nil {
		return
	}
	if _, err = rand.Read(seed); err != nil {
		return
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	return hex.EncodeToString(mac), base64.StdEncoding.EncodeToString(seed), base64.StdEncoding.EncodeToString(pub), nil
}

// KeyID names a key without revealing it: the first 8 bytes of its HMAC
// over a fixed text, in hex. It lets verify tell a wrong key from a
// tampered record.
func KeyID(key []byte) string {
	if key == nil {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("nexus audit key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// linker computes a line's link: HMAC-SHA256 with a key, sha256 without.
// Each Writer and verify run has its own (hash.Hash is not safe to share).
type linker struct {
	key []byte
	mac interface {
		Reset()
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
	sum [sha256.Size]byte
	hex [2 * sha256.Size]byte
}

func newLinker(key []byte) *linker {
	l := &linker{key: key}
	if key != nil {
		l.mac = hmac.New(sha256.New, key)
	}
	return l
}

// link is the hex link of line: keyed when l has a key.
func (l *linker) link(line []byte) string {
	if l.mac == nil {
		l.sum = sha256.Sum256(line)
	} else {
		l.mac.Reset()
		l.mac.Write(line)
		l.mac.Sum(l.sum[:0])
	}
	hex.Encode(l.hex[:], l.sum[:])
	return string(l.hex[:])
}

// plain is the unkeyed link of line.
func plain(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}
