package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendString: what AppendString writes decodes, with encoding/json,
// to what encoding/json would give for the same Go string.
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "ctl \x00\x01\x1f\t\n\r", "utf8 é 日本 😀", "bad \xff\xfe utf8", "\u2028\u2029", strings.Repeat("long run of plain text ", 20) + "\""} {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %s: %v", s, got, err)
		}
		var want string
		b, _ := json.Marshal(s)
		json.Unmarshal(b, &want)
		if back != want {
			t.Errorf("%q round-trips to %q", s, back)
		}
	}
}

// FuzzAppendString holds AppendString to encoding/json for any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\t", "é日😀", "\xff\xfe", "\u2028", "abcdefgh\"ijklmnop"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString(nil, s)
		var back, want string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %s: %v", s, got, err)
		}
		b, _ := json.Marshal(s)
		json.Unmarshal(b, &want)
		if back != want {
			t.Fatalf("%q round-trips to %q, encoding/json to %q", s, back, want)
		}
	})
}

// FuzzAppendStringHTML: AppendStringHTML writes what json.Marshal writes,
// byte for byte, eight plain bytes at a time or one by one.
func FuzzAppendStringHTML(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\b\f\n", "plain words, then <tag> & more text", "\xff", "\u2029", strings.Repeat("x", 20) + "&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendStringHTML(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: wrote %s, json.Marshal %s", s, got, want)
		}
	})
}
