package redact

import (
	"strings"
	"testing"
)

// The secrets the outside test found in the audit log in clear, and the
// patterns the filter always caught.
func TestString(t *testing.T) {
	r := New()
	r.Entropy(true)
	for _, c := range []struct{ in, secret string }{
		{`password=hunter3 and then sk-live-4eC39HqLyjWDarjtT1zdp7dc`, "hunter3"},
		{`password=hunter3 and then sk-live-4eC39HqLyjWDarjtT1zdp7dc`, "4eC39HqLyjWDarjtT1zdp7dc"},
		{`{"Authorization":"Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`, "ghp_abc"},
		{`Authorization: Bearer opaque-but-secret-42`, "opaque-but-secret-42"},
		{`"Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"`, "YWxhZGRp"},
		{`Cookie: session=abc123def456`, "abc123def456"},
		{`key AKIAIOSFODNN7EXAMPLE here`, "AKIAIOSFODNN7EXAMPLE"},
		{`random token Zx8Qp2Lr7Tn4Wv9Ks3Hd6Jm1Bf5 here`, "Zx8Qp2Lr7Tn4Wv9Ks3Hd6Jm1Bf5"},
	} {
		var n Counts
		out, changed := r.String(c.in, &n)
		if !changed || strings.Contains(out, c.secret) || n.Total() == 0 {
			t.Errorf("%q -> %q (%s)", c.in, out, n.Reason())
		}
	}
	for _, clean := range []string{
		"a plain sentence with words in it",
		"commit 3f786850e387550fdab836ed7e6dc881de23001b and uuid 123e4567-e89b-12d3-a456-426614174000",
		"/usr/local/share/nexus/filters/redact-secrets.wasm",
		"skip the sk-short one",
	} {
		var n Counts
		if out, changed := r.String(clean, &n); changed {
			t.Errorf("%q -> %q", clean, out)
		}
	}
	// Entropy is off by default (the filter's results keep random ids).
	var n Counts
	if _, changed := New().String("id Zx8Qp2Lr7Tn4Wv9Ks3Hd6Jm1Bf5", &n); changed {
		t.Error("entropy redaction without Entropy")
	}
}

// Values are judged by their key: a secret key's value goes whole,
// header-like and short names included; other keys' values are scanned.
func TestValue(t *testing.T) {
	r := New()
	for _, c := range []struct {
		key, val string
		gone     bool
	}{
		{"pass", "hunter3", true},
		{"Authorization", "Bearer xyz-123", true},
		{"X-Api-Key", "abc123", true},
		{"db_password", "hunter3", true},
		{"password", "", false},
		{"password", "${DB_PASSWORD}", false},
		{"compass", "north", false},
		{"message", "hello", false},
		{"message", "password=hunter3", true},
	} {
		var n Counts
		out, _ := r.Value(c.key, c.val, &n)
		if gone := out != c.val; gone != c.gone {
			t.Errorf("%s=%q -> %q", c.key, c.val, out)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("password=hunter3 sk-live-4eC39HqLyjWDarjtT1zdp7dc Authorization: Bearer x")
	f.Add("-----BEGIN RSA PRIVATE KEY-----\nabc")
	r := New()
	r.Entropy(true)
	f.Fuzz(func(t *testing.T, s string) {
		var n Counts
		out, changed := r.String(s, &n)
		if !changed && out != s || changed && n.Total() == 0 {
			t.Fatalf("%q -> %q, %v", s, out, n)
		}
	})
}
