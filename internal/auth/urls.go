package auth

import (
	"errors"
	"net"
	"net/url"
	"sort"
	"strings"
)

// ErrUserInfo is a server URL with credentials in it, which OAuth cannot
// use: the token is what authenticates, and the URL is its resource.
var ErrUserInfo = errors.New("URL must not carry user information")

// canonicalResource is the RFC 8707 / MCP canonical form of a server URL:
// lower-case scheme and host, no default port, no fragment, and no trailing
// slash on an empty path. It is also the key of the token store.
func canonicalResource(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" {
		return "", errors.New("not an absolute URL (it needs a scheme and a host)")
	}
	if u.User != nil {
		return "", ErrUserInfo
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "https" && u.Scheme != "http" {
		return "", errors.New("URL scheme must be https (or http on localhost)")
	}
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	u.Host = host
	u.Fragment = ""
	u.RawFragment = ""
	if u.Path == "/" {
		u.Path = ""
		u.RawPath = ""
	}
	return u.String(), nil
}

// resourceCovers reports whether the protected resource identifier res
// (from Protected Resource Metadata) covers serverURL: the same origin and
// a path equal to, or a parent segment of, the server's path. A resource at
// the origin root therefore covers every endpoint on it, as RFC 9728's root
// well-known location implies; anything on another origin never does.
func resourceCovers(res, serverURL string) bool {
	r, err1 := canonicalResource(res)
	s, err2 := canonicalResource(serverURL)
	if err1 != nil || err2 != nil {
		return false
	}
	ru, _ := url.Parse(r)
	su, _ := url.Parse(s)
	if ru.Scheme != su.Scheme || ru.Host != su.Host {
		return false
	}
	if ru.RawQuery != "" && ru.RawQuery != su.RawQuery {
		return false
	}
	rp := strings.TrimSuffix(ru.EscapedPath(), "/")
	sp := strings.TrimSuffix(su.EscapedPath(), "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// isLoopbackHost reports whether host (no port) names this machine:
// localhost, *.localhost, 127.0.0.0/8 or ::1.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// checkSecureURL enforces OAuth 2.1 communication security on a URL the
// client is about to use: https, or http to a loopback host.
func checkSecureURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return errors.New("URL has no host")
		}
		return nil
	case "http":
		if isLoopbackHost(u.Hostname()) {
			return nil
		}
		return ErrInsecureURL
	default:
		return ErrInsecureURL
	}
}

// origin is scheme://host[:port] of u.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }

// prmURLs are the Protected Resource Metadata locations for a server URL
// in the spec's order: path-aware, then root. A server at the root has only
// the root location.
func prmURLs(serverURL string) []string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil
	}
	const wk = "/.well-known/oauth-protected-resource"
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	var out []string
	if path != "" {
		out = append(out, origin(u)+wk+path)
	}
	return append(out, origin(u)+wk)
}

// MetadataURLs are the Authorization Server metadata locations for an
// issuer, in the order the MCP spec requires: for an issuer with a path,
// RFC 8414 with path insertion, OIDC with path insertion, OIDC with path
// appending; for one without, RFC 8414 then OIDC. The OAuth client and the
// gateway's resource server both look there.
func MetadataURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	o := origin(u)
	if path == "" {
		return []string{
			o + "/.well-known/oauth-authorization-server",
			o + "/.well-known/openid-configuration",
		}
	}
	return []string{
		o + "/.well-known/oauth-authorization-server" + path,
		o + "/.well-known/openid-configuration" + path,
		o + path + "/.well-known/openid-configuration",
	}
}

// sameIssuer compares issuer identifiers as the 2026-07-28 spec requires
// (RFC 8414 section 3.3, RFC 9207 section 2.4): simple string comparison,
// no normalization at all, so "https://as.example/" is not
// "https://as.example".
func sameIssuer(a, b string) bool { return a == b }

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// scopeSet normalizes a list of scopes: split on spaces, deduplicated,
// order kept.
func scopeSet(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, s := range l {
			for _, f := range strings.Fields(s) {
				if !seen[f] {
					seen[f] = true
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// scopeKey identifies a scope set independent of order.
func scopeKey(scopes []string) string {
	s := append([]string(nil), scopeSet(scopes)...)
	sort.Strings(s)
	return strings.Join(s, " ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
