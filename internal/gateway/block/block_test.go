package block

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Every row of the block and of its nested blocks has an example, which
// internal/config's TestNamedBlockOptions decodes in both formats.
func TestRowsHaveExamples(t *testing.T) {
	for _, r := range Config.Options.Shape().Rows {
		if r.Example == "" {
			t.Errorf("row %s has no Example", r.HCL)
		}
		if r.Nested != nil {
			for _, n := range r.Nested.Rows {
				if n.Example == "" {
					t.Errorf("row %s.%s has no Example", r.HCL, n.HCL)
				}
			}
		}
	}
}

func TestParseStateKey(t *testing.T) {
	key := strings.Repeat("ab", 32)
	raw := []byte(strings.Repeat("k", 32))
	for _, ok := range []string{key, " " + key + "\n", base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)} {
		if b, err := ParseStateKey(ok); err != nil || len(b) != 32 {
			t.Errorf("ParseStateKey(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "not-a-key", key[:62], base64.StdEncoding.EncodeToString(raw[:16])} {
		_, err := ParseStateKey(bad)
		if err == nil {
			t.Errorf("ParseStateKey(%q) took it", bad)
		} else if bad != "" && strings.Contains(err.Error(), bad) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}

func TestChecks(t *testing.T) {
	for _, c := range []struct {
		check func(string) string
		good  []string
		bad   []string
	}{
		{checkListen, []string{"127.0.0.1:8750", ":0", "[::1]:80"}, []string{"8750", "host:http", "a b:1"}},
		{checkPublicURL, []string{"https://nexus.example.com/mcp"}, []string{"/mcp", "https://u:p@x/mcp", "https://x/mcp#a"}},
		{checkOrigin, []string{"https://app.example.com", "http://localhost:3000/"}, []string{"https://app.example.com/x", "app.example.com"}},
		{checkHost, []string{"nexus.example.com", "10.0.0.5:8750", "[::1]"}, []string{"https://x/mcp", "x:http", "a b"}},
		{checkSessionStore, []string{"", "memory", "redis://redis:6379", "unix:///run/redis.sock"}, []string{"redis://", "mongodb://x", "redis://:p%zz@x"}},
	} {
		for _, s := range c.good {
			if p := c.check(s); p != "" {
				t.Errorf("%q: %s", s, p)
			}
		}
		for _, s := range c.bad {
			if c.check(s) == "" {
				t.Errorf("%q passed", s)
			}
		}
	}
	// A password in a store URL is never shown.
	if p := checkSessionStore("mongodb://u:secret@x"); strings.Contains(p, "secret") {
		t.Errorf("shows the password: %s", p)
	}
}

func TestLimitProblems(t *testing.T) {
	if p := (Limits{MaxSessions: 10, MaxSessionsPerAgent: 20}).problems(); len(p) != 1 || p[0][0] != "max_sessions_per_agent" {
		t.Errorf("per-agent over global: %v", p)
	}
	if p := (Limits{MaxInflightBytes: 1024}).problems(); len(p) != 1 || p[0][0] != "max_inflight_bytes" {
		t.Errorf("budget under the default body: %v", p)
	}
	if p := (Limits{MaxInflightBytes: 1024, MaxBodyBytes: 512, MaxRequests: 8, MaxRequestsPerAgent: 8}).problems(); len(p) != 0 {
		t.Errorf("consistent limits: %v", p)
	}
}
