package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

var stringSeeds = []string{
	`"plain"`, `"esc\"aped\n"`, `"\u00e9"`, "\"bad\xffutf8\"", `"\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`,
	`"\udc00\ud800"`, `"\ud800\ud800\udc00"`, `"\x"`, "\"\x01\"", `"abc`, `"\u12G4"`, `"\/\b\f\r\t"`,
	`"é and ✓"`, `"` + strings.Repeat("a", 100) + `\n` + strings.Repeat("é", 40) + `"`, `"\`, `"\u00"`,
}

// DecodeString (and Unquote through it) decode every string as
// encoding/json does, and refuse what it refuses.
func TestDecodeStringAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range stringSeeds {
		checkDecode(t, []byte(s))
	}
}

func FuzzDecodeString(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return // a long input finds nothing a short one does not
		}
		checkDecode(t, b)
	})
}

func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	if len(b) == 0 || b[0] != '"' {
		return
	}
	var want string
	wantErr := json.Unmarshal(b, &want)
	got, err := Unquote(b)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: Unquote error %v, encoding/json %v", b, err, wantErr)
	}
	if err == nil && got != want {
		t.Fatalf("%q: Unquote %q, encoding/json %q", b, got, want)
	}
	// DecodeString reads one string from a longer document.
	doc := append(append([]byte{}, b...), `,1]`...)
	s, end, _, err := DecodeString(doc, 0)
	if wantErr == nil && (err != nil || s != want || SkipWS(b, end) != len(b)) {
		t.Fatalf("%q: DecodeString %q end %d err %v, want %q end %d", b, s, end, err, want, len(b))
	}
	if err != nil {
		if _, ok := err.(*ScanError); !ok {
			t.Fatalf("%q: error %T, want *ScanError", b, err)
		}
	}
}

// FuzzRunEnd: runEnd stops where a byte-by-byte reading of the same rule
// does, from any start, in both modes.
func FuzzRunEnd(f *testing.F) {
	f.Add([]byte(`plain text, then "a quote`), 0)
	f.Add([]byte("line one\\nline two\x01é"), 3)
	f.Add([]byte(strings.Repeat("a", 70)+"é"+strings.Repeat("b", 40)+"\\"), 5)
	f.Fuzz(func(t *testing.T, s []byte, i int) {
		if len(s) > 1<<10 || i < 0 || i > len(s) {
			return
		}
		for _, ascii := range []bool{true, false} {
			want := i
			for want < len(s) {
				c := s[want]
				if c == '"' || c == '\\' || c < 0x20 || (ascii && c >= 0x80) {
					break
				}
				want++
			}
			if got := runEnd(s, i, ascii); got != want {
				t.Fatalf("runEnd(%q, %d, %v) = %d, want %d", s, i, ascii, got, want)
			}
		}
	})
}
