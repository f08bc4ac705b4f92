package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

var scanSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `-0.5e+10`, `0`, `01`, `1.`, `.5`, `"\x"`,
	`{"a" 1}`, `{"a":1,}`, `[1,]`, `tru`, `nul`, `"abc`, `{"a":"\ud800"}`, ` {"x" : [ true , false ] } `,
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`, "\"\x01\"", `[[[[]]]]`,
	`{"a":1}}`, `1 2`, `"\u12G4"`, `-`, `1e`, `{"\u0061":1}`,
}

func TestScannerAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range scanSeeds {
		if got, want := ValidJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("%q: scanner says %v, encoding/json %v", s, got, want)
		}
	}
	deep := strings.Repeat("[", MaxDepth+5) + strings.Repeat("]", MaxDepth+5)
	if ValidJSON([]byte(deep)) {
		t.Error("nesting past MaxDepth accepted")
	}
}

func TestUnquote(t *testing.T) {
	for _, s := range []string{`"plain"`, `"esc\"aped\n"`, `"\u00e9"`, "\"bad\xffutf8\""} {
		var want string
		json.Unmarshal([]byte(s), &want)
		got, err := Unquote([]byte(s))
		if err != nil || got != want {
			t.Errorf("%q: got %q %v, want %q", s, got, err, want)
		}
	}
}

// FuzzScanner holds the hand-written scanner to encoding/json's verdict.
func FuzzScanner(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := ValidJSON(b), json.Valid(b); got != want {
			t.Fatalf("%q: scanner says %v, encoding/json %v", b, got, want)
		}
	})
}

// FuzzSkipValid: on a valid document SkipValid ends where SkipValue
// does; on any bytes it returns without reading out of range.
func FuzzSkipValid(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := SkipWS(b, 0)
		got, gerr := SkipValid(b, i, 0)
		if got < 0 || got > len(b) {
			t.Fatalf("%q: SkipValid ended at %d of %d", b, got, len(b))
		}
		want, werr := SkipValue(b, i, 0)
		if werr == nil && (gerr != nil || got != want) {
			t.Fatalf("%q: SkipValid %d %v, SkipValue %d", b, got, gerr, want)
		}
	})
}

// TestSpecial: every word holding a quote, a backslash or a control byte,
// at any position, is special; words of plain bytes are not.
func TestSpecial(t *testing.T) {
	plain := []byte("abcdefgh")
	if special(binary.LittleEndian.Uint64(plain)) {
		t.Error("plain bytes are special")
	}
	for _, c := range []byte{'"', '\\', 0, 0x1f, '\n'} {
		for pos := range 8 {
			w := []byte("\xff\x80 ~azAZ")
			w[pos] = c
			if !special(binary.LittleEndian.Uint64(w)) {
				t.Errorf("%q at %d: not special", c, pos)
			}
		}
	}
	for _, c := range []byte{' ', '!', '#', '[', ']', 0x7f, 0x80, 0xff} {
		if special(binary.LittleEndian.Uint64(bytes.Repeat([]byte{c}, 8))) {
			t.Errorf("%q: special", c)
		}
	}
}

// BenchmarkValidString: ValidJSON on one string of each shape: short (a
// key), long plain text, long text with an escape every line (code or
// logs), and long text that is mostly escapes (JSON inside a string).
func BenchmarkValidString(b *testing.B) {
	line := strings.Repeat("x", 60) + `\n`
	for _, c := range []struct{ name, s string }{
		{"short", `"content"`},
		{"64KB-plain", `"` + strings.Repeat("a", 64<<10) + `"`},
		{"64KB-lines", `"` + strings.Repeat(line, (64<<10)/len(line)) + `"`},
		{"64KB-json", `"` + strings.Repeat(`{\"a\":1},`, (64<<10)/11) + `"`},
	} {
		doc := []byte(c.s)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if !ValidJSON(doc) {
					b.Fatal("invalid")
				}
			}
		})
	}
}

// TestLongStrings: strings long enough for plainRun's vector search, with
// each kind of special byte at every position, are judged as encoding/json
// judges them; and so is the same text with an escape on every line.
func TestLongStrings(t *testing.T) {
	for _, n := range []int{31, 32, 33, 40, 70, 130} {
		for pos := range n {
			for _, ins := range []string{`\"`, `\\`, `\n`, `\u00e9`, "\n", "\x01", `"`, `\x`, `\u12`, "\xff", `\`} {
				s := []byte(strings.Repeat("a", n))
				doc := append(append([]byte(`"`), s[:pos]...), ins...)
				doc = append(append(doc, s[pos:]...), '"')
				for _, d := range [][]byte{doc, doc[:len(doc)-1], append(append([]byte(`["`), doc[1:]...), `,"b"]`...)} {
					if got, want := ValidJSON(d), json.Valid(d); got != want {
						t.Fatalf("%q: scanner says %v, encoding/json %v", d, got, want)
					}
				}
			}
		}
	}
}

// FuzzStringEnd: on a string SkipString accepts, StringEnd finds the same
// end and says the same about escapes.
func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"\\"`, `"\\\""x`, `"\\\\\\"`, `"` + strings.Repeat(`\\`, 20) + `"`, `"\u0041\n"`, `"unterminated`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		want, wantEsc, err := SkipString(b, 0)
		if err != nil {
			return
		}
		got, gotEsc, err := StringEnd(b, 0)
		if err != nil || got != want || gotEsc != wantEsc {
			t.Fatalf("%q: StringEnd %d %v %v, SkipString %d %v", b, got, gotEsc, err, want, wantEsc)
		}
	})
}
