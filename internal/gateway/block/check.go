package block

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// What each of the gateway block's values must be, alone.

// checkListen says what is wrong with a listen address, or "".
func checkListen(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("listen %q is not host:port (%v)", s, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("listen %q: the port must be a number from 0 to 65535", s)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Sprintf("listen %q: %q is not a host", s, host)
	}
	return ""
}

// checkPublicURL says what is wrong with the gateway's public URL, or "":
// it is the OAuth resource identifier, which has no fragment (RFC 8707),
// and clients are given it, so it carries no credentials.
func checkPublicURL(s string) string {
	if p := option.CheckURL("public_url", s, false); p != "" {
		return p
	}
	u, _ := url.Parse(s)
	switch {
	case u.User != nil:
		return fmt.Sprintf("public_url %q holds a user name or password; it is given to every client, so it must not", s)
	case u.Fragment != "" || strings.HasSuffix(s, "#"):
		return fmt.Sprintf("public_url %q has a fragment (#...); a resource URL has none (RFC 8707)", s)
	}
	return ""
}

// checkOrigin says what is wrong with a browser origin, or "".
func checkOrigin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Sprintf("allowed origin %q is not scheme://host[:port]", s)
	}
	return ""
}

// allowedHostsFix says what allowed_hosts takes.
const allowedHostsFix = `A host is a name or an IP address, with a port or without (then any port): allowed_hosts = ["nexus.example.com", "10.0.0.5:8750"].`

// checkHost says what is wrong with an allowed_hosts entry, or "".
func checkHost(s string) string {
	if strings.Contains(s, "/") {
		return fmt.Sprintf("allowed_hosts entry %q is a URL or has a path; give the host alone, with its port or without", s)
	}
	h := s
	if host, port, err := net.SplitHostPort(s); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Sprintf("allowed_hosts entry %q has a port that is not a number", s)
		}
		h = host
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return ""
	}
	if h == "" || strings.ContainsAny(h, "/@?#:[] ") {
		return fmt.Sprintf("allowed_hosts entry %q is not a host name or address", s)
	}
	return ""
}

const sessionStoreFix = `Use "memory" (one process) or redis://host:6379 (rediss:// for TLS); put a password in a sensitive variable: session_store = "redis://:${var.redis_password}@redis:6379"`

// checkSessionStore says what is wrong with a session store URL, or "";
// a password in it is never shown.
func checkSessionStore(s string) string {
	switch {
	case s == "" || s == "memory":
		return ""
	case strings.HasPrefix(s, "redis://"), strings.HasPrefix(s, "rediss://"), strings.HasPrefix(s, "unix://"):
		u, err := url.Parse(s)
		if err != nil {
			// url.Error repeats the URL, password and all: say only why.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Sprintf("session_store is not a URL: %v", err)
		}
		if u.Scheme != "unix" && u.Host == "" {
			return "session_store names no host"
		}
		return ""
	}
	return fmt.Sprintf("session_store %q is not a store this Nexus knows", diag.MaskURLs(s))
}

// StateKeyEnv names the environment variable `nexus serve` reads the
// requestState key from when the config sets no state_key.
const StateKeyEnv = "NEXUS_STATE_KEY"

const stateKeyFix = `Make a key with openssl rand -hex 32, keep it in a sensitive variable shared by the replicas, and write state_key = var.state_key in the gateway block.`

// ParseStateKey reads a requestState key: 32 bytes written as 64 hex
// digits or in base64 (standard or URL alphabet, padded or not).
func ParseStateKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("the requestState key is not 32 bytes written as 64 hex digits or in base64 (%d characters given; the key itself is not shown)", len(s))
}

// checkStateKey says what is wrong with a state_key: not a key (an
// error), or written in the file (a warning). The key is never shown.
func checkStateKey(s string, fromRef, allowUnset bool) (problem string, isErr bool) {
	if s == "" && fromRef && allowUnset {
		return "", false
	}
	if _, err := ParseStateKey(s); err != nil {
		return "state_key: " + err.Error(), true
	}
	if !fromRef {
		return "state_key is written in the config file; put it in a sensitive variable (state_key = var.state_key) so the file can be shared and compiled configs never hold it", false
	}
	return "", false
}

// isZeroDuration says whether a limit's text is zero in any unit, which
// is its default.
func isZeroDuration(s string) bool {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f == 0
	}
	d, err := time.ParseDuration(s)
	return err == nil && d == 0
}

// defaultMaxBodyBytes is the gateway's max_body_bytes when none is set
// (the protocol's frame limit).
const defaultMaxBodyBytes = 10 << 20

// problems says what is inconsistent between the limits: a per-agent cap
// over its global one, a bytes budget too small for one body. Each entry
// is the limit at fault, the problem and the fix.
func (l Limits) problems() [][3]string {
	var out [][3]string
	for _, c := range []struct {
		agent, global string
		a, g          int
	}{
		{"max_sessions_per_agent", "max_sessions", l.MaxSessionsPerAgent, l.MaxSessions},
		{"max_requests_per_agent", "max_requests", l.MaxRequestsPerAgent, l.MaxRequests},
		{"max_inflight_bytes_per_agent", "max_inflight_bytes", l.MaxInflightBytesPerAgent, l.MaxInflightBytes},
		{"max_bridged_upstreams_per_agent", "max_bridged_upstreams", l.MaxBridgedUpstreamsPerAgent, l.MaxBridgedUpstreams},
	} {
		if c.a > 0 && c.g > 0 && c.a > c.g {
			out = append(out, [3]string{c.agent,
				fmt.Sprintf("%s (%d) is over %s (%d): one agent can never hold more than all agents together", c.agent, c.a, c.global, c.g),
				fmt.Sprintf("Lower %s, or raise %s.", c.agent, c.global)})
		}
	}
	body := l.MaxBodyBytes
	if body <= 0 {
		body = defaultMaxBodyBytes
	}
	for _, c := range []struct {
		name string
		n    int
	}{{"max_inflight_bytes", l.MaxInflightBytes}, {"max_inflight_bytes_per_agent", l.MaxInflightBytesPerAgent}} {
		if c.n > 0 && c.n < body {
			out = append(out, [3]string{c.name,
				fmt.Sprintf("%s (%d) is under max_body_bytes (%d): a request of the largest size allowed could never be served", c.name, c.n, body),
				fmt.Sprintf("Raise %s to at least %d, or lower max_body_bytes.", c.name, body)})
		}
	}
	return out
}
