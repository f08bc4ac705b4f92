package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/bounded"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// storeVersion is the format of token files. Version 2 binds every
// credential to its authorization server: each client (the token's and
// each registration) names its issuer, and registrations are keyed by it.
// Version 1 files (Nexus before the 2026-07-28 revision) are migrated on
// load: a client without an issuer gets the record's issuer, a
// registration the issuer it is keyed by.
const storeVersion = 2

// record is what is kept for one server URL: the token, the authorization
// server it came from (so a refresh needs no discovery) and any client
// registered dynamically for it. The file holds secrets: it is written 0600
// in a 0700 directory, atomically.
type record struct {
	Version   int       `json:"version"`
	Server    string    `json:"server,omitempty"` // name, informational
	ServerURL string    `json:"server_url"`
	SavedAt   time.Time `json:"saved_at"`

	Resource      string `json:"resource,omitempty"`
	Issuer        string `json:"issuer,omitempty"`
	TokenEndpoint string `json:"token_endpoint,omitempty"`
	// RevocationEndpoint is used by Logout (RFC 7009), when known.
	RevocationEndpoint string `json:"revocation_endpoint,omitempty"`
	Grant              string `json:"grant,omitempty"`

	Client *clientInfo  `json:"client,omitempty"` // the client the token was issued to
	Token  *storedToken `json:"token,omitempty"`

	// Registrations are clients from Dynamic Client Registration, by
	// issuer, reused until their secret expires.
	Registrations map[string]*clientInfo `json:"registrations,omitempty"`
}

// storedToken is a token as stored.
type storedToken struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Scopes       []string  `json:"scopes,omitempty"` // granted (or, when the AS did not say, requested)
	ObtainedAt   time.Time `json:"obtained_at"`
	// DPoPKey is the private key (PKCS #8 PEM) the token and its refresh
	// token are bound to, for a DPoP token (RFC 9449).
	DPoPKey string `json:"dpop_key,omitempty"`
}

// clientInfo is the client identity used with an authorization server.
type clientInfo struct {
	ClientID        string    `json:"client_id"`
	ClientSecret    string    `json:"client_secret,omitempty"`
	AuthMethod      string    `json:"token_endpoint_auth_method,omitempty"`
	RedirectURI     string    `json:"redirect_uri,omitempty"`
	Source          string    `json:"source"` // "config", "cimd", "dcr", "prompt"
	Issuer          string    `json:"issuer,omitempty"`
	SecretExpiresAt time.Time `json:"client_secret_expires_at,omitzero"`
}

// store persists records under a directory, one file per server URL.
type store struct {
	dir  string // "" = memory only
	warn func(msg string, args ...any)
}

// defaultTokenDir is ~/.nexus/tokens.
func defaultTokenDir() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".nexus", "tokens"), nil
}

// fileName is the file for a canonical server URL: a readable host prefix
// and a hash of the whole URL, so different paths on one host never share
// a file and no URL character reaches the file system.
func fileName(serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	host := serverURL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, "/?"); i >= 0 {
		host = host[:i]
	}
	var b strings.Builder
	for _, r := range host {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 48 {
			break
		}
	}
	return b.String() + "-" + hex.EncodeToString(sum[:12]) + ".json"
}

func (s *store) path(serverURL string) string { return filepath.Join(s.dir, fileName(serverURL)) }

// load reads the record of serverURL; a missing file is (nil, nil). A file
// readable by others is tightened to 0600 first, with a warning.
func (s *store) load(serverURL string) (*record, error) {
	if s.dir == "" {
		return nil, nil
	}
	p := s.path(serverURL)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if s.warn != nil {
			s.warn("token file was readable by other users; restricting it to 0600", "path", p, "mode", fi.Mode().Perm().String())
		}
		if err := os.Chmod(p, 0o600); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readLimited(f)
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("token file %s is corrupt: %v", p, err)
	}
	if r.Version < 1 || r.Version > storeVersion || r.ServerURL != serverURL {
		return nil, nil // another format or a hash collision: ignore it
	}
	r.migrate()
	return &r, nil
}

// migrate brings a version 1 record to version 2 (see storeVersion).
func (r *record) migrate() {
	if r.Version >= 2 {
		return
	}
	if r.Client != nil && r.Client.Issuer == "" {
		r.Client.Issuer = r.Issuer
	}
	for iss, ci := range r.Registrations {
		if ci == nil {
			delete(r.Registrations, iss)
			continue
		}
		if ci.Issuer == "" {
			ci.Issuer = iss
		}
	}
	r.Version = storeVersion
}

// save writes the record atomically (bounded.WriteFile: a 0600 temporary
// file in the same directory, synced, then renamed over the old one).
func (s *store) save(r *record) error {
	if s.dir == "" {
		return nil
	}
	r.Version = storeVersion
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return bounded.WriteFile(s.path(r.ServerURL), b)
}

// remove deletes the record of serverURL; a missing file is not an error.
func (s *store) remove(serverURL string) error {
	if s.dir == "" {
		return nil
	}
	err := os.Remove(s.path(serverURL))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
