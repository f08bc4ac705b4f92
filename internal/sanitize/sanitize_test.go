package sanitize

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type sample struct {
	name, in, want string
}

var samples = []sample{
	// Text that must survive untouched.
	{"empty", "", ""},
	{"ascii", "hello, world", "hello, world"},
	{"newline and tab kept", "a\tb\nc\n", "a\tb\nc\n"},
	{"unicode kept", "héllo 世界 🙂 👩‍💻 e\u0301", "héllo 世界 🙂 👩‍💻 e\u0301"},
	{"rtl letters kept", "שלום مرحبا", "שלום مرحبا"},
	{"replacement char kept", "a\uFFFDb", "a\uFFFDb"},

	// C0 controls and DEL.
	{"carriage return", "a\r\nb", "a\nb"},
	{"overwrite with CR", "safe command\rrm -rf ~    ", "safe commandrm -rf ~    "},
	{"backspace", "abc\b\bX", "abcX"},
	{"delete", "a\x7fb", "ab"},
	{"nul bel vt ff", "a\x00b\x07c\x0bd\x0ce", "abcde"},

	// CSI.
	{"sgr color", "\x1b[31mred\x1b[0m", "red"},
	{"csi with parameters", "\x1b[38;2;255;0;0mX\x1b[1;4;53m", "X"},
	{"cursor movement", "\x1b[2A\x1b[10;5Hover\x1b[K\x1b[3C", "over"},
	{"private mode", "\x1b[?25lhidden cursor\x1b[?1049h", "hidden cursor"},
	{"csi intermediate", "\x1b[1 qx", "x"},
	{"csi malformed stops at control", "\x1b[3\n1m", "\n1m"},

	// OSC.
	{"osc title bel", "\x1b]0;pwned\x07after", "after"},
	{"osc title st", "before\x1b]2;title\x1b\\after", "beforeafter"},
	{"osc 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click here\x1b]8;;\x1b\\", "click here"},
	{"osc 52 clipboard", "\x1b]52;c;ZWNobyBwd25lZA==\x07ok", "ok"},
	{"osc unterminated", "\x1b]0;title with no end", "0;title with no end"},
	{"osc aborted by esc", "\x1b]0;x\x1b[31mred", "red"},
	{"osc cancelled by can", "\x1b]0;x\x18after", "after"},
	{"osc cancelled by sub", "\x1b]0;x\x1aafter", "after"},

	// DCS, SOS, PM, APC.
	{"dcs sixel", "\x1bPq#0;2;0;0;0#0~~\x1b\\x", "x"},
	{"sos pm apc", "\x1bXsos\x1b\\a\x1b^pm\x1b\\b\x1b_apc\x1b\\c", "abc"},
	{"dcs unterminated", "\x1bP1$r", "1$r"},

	// 8-bit C1 forms, encoded as UTF-8.
	{"c1 csi", "\u009b31mred\u009b0m", "red"},
	{"c1 osc with c1 st", "\u009d0;title\u009cafter", "after"},
	{"c1 osc with bel", "\u009d0;title\aafter", "after"},
	{"c1 dcs", "\u0090q#0\u009cx", "x"},
	{"c1 sos pm apc", "\u0098a\u009c1\u009eb\u009c2\u009fc\u009c3", "123"},
	{"osc ended by c1 st", "\x1b]0;t\u009cx", "x"},
	{"other c1", "a\u0085b\u0084c\u0080d\u009ae", "abcde"},

	// Short ESC sequences.
	{"save restore cursor", "\x1b7saved\x1b8", "saved"},
	{"reset", "\x1bcafter reset", "after reset"},
	{"charset", "\x1b(Bx\x1b)0y", "xy"},
	{"reverse index", "a\x1bMb", "ab"},
	{"keypad", "\x1b=\x1b>k", "k"},
	{"esc then non-ascii", "\x1bé", "é"},
	{"esc esc", "\x1b\x1b[1mX", "X"},
	{"esc then newline", "a\x1b\nb", "a\nb"},

	// Unterminated at end of input.
	{"lone esc at end", "text\x1b", "text"},
	{"csi at end", "text\x1b[", "text"},
	{"csi params at end", "text\x1b[31;1", "text"},
	{"osc introducer at end", "text\x1b]", "text"},
	{"c1 csi at end", "text\u009b", "text"},

	// Bidi controls ("Trojan Source", CVE-2021-42574).
	{"each bidi control",
		"a\u202ab\u202bc\u202cd\u202de\u202ef\u2066g\u2067h\u2068i\u2069j\u200ek\u200fl\u061cm",
		"abcdefghijklm"},
	{"trojan source comment-out",
		"/*\u202e } \u2066if (isAdmin)\u2069 \u2066 begin admins only */",
		"/* } if (isAdmin)  begin admins only */"},
	{"trojan source stretched string",
		"if access_level != \"user\u202e \u2066// Check if admin\u2069 \u2066\" {",
		"if access_level != \"user // Check if admin \" {"},
	{"trojan source early return",
		"return\u2067 // \u2066 err\u2069\u2069",
		"return //  err"},

	// Invalid UTF-8.
	{"invalid byte", "a\xffb", "a\uFFFDb"},
	{"truncated sequence", "ab\xc3", "ab\uFFFD"},
	{"overlong", "\xc0\xaf", "\uFFFD\uFFFD"},
	{"surrogate", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
	{"raw 8-bit csi byte is not csi", "\x9b31m", "\uFFFD31m"},
	{"raw c2 without continuation", "\xc2[31m", "\uFFFD[31m"},
}

func TestForDisplay(t *testing.T) {
	for _, tc := range samples {
		t.Run(tc.name, func(t *testing.T) {
			got := ForDisplay(tc.in)
			if got != tc.want {
				t.Errorf("ForDisplay(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			if again := ForDisplay(got); again != got {
				t.Errorf("not idempotent: ForDisplay(%q) = %q", got, again)
			}
			if _, changed := Clean(tc.in, MaxOutput); changed != (got != tc.in) {
				t.Errorf("Clean(%q) reports changed=%v, but the text went to %q", tc.in, changed, got)
			}
		})
	}
}

func TestForDisplayLimit(t *testing.T) {
	note := func(over, max int) string { return truncationNote(over, max) }
	n100 := note(100, 100)

	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"under the cap", "abc", 10, "abc"},
		{"exactly the cap", "abcdefghij", 10, "abcdefghij"},
		{"no cap", strings.Repeat("a", 1000), 0, strings.Repeat("a", 1000)},
		{"negative cap is no cap", "abc", -1, "abc"},
		{"clean over the cap", strings.Repeat("a", 200), 100,
			strings.Repeat("a", 100-len(n100)) + n100},
		{"one byte over", strings.Repeat("a", 101), 100,
			strings.Repeat("a", 100-len(note(1, 100))) + note(1, 100)},
		{"clean cut at rune boundary", strings.Repeat("é", 100), 100,
			strings.Repeat("é", (100-len(n100))/2) + n100},
		{"dirty over the cap counts sanitized bytes",
			strings.Repeat("\x1b[1ma\x1b[0m", 200), 100,
			strings.Repeat("a", 100-len(n100)) + n100},
		{"dirty cut at rune boundary", "\x1b[0m" + strings.Repeat("世", 100), 100,
			strings.Repeat("世", (100-len(note(200, 100)))/3) + note(200, 100)},
		{"escapes do not count", strings.Repeat("\x1b[0m", 100) + "abc", 10, "abc"},
		{"replacement chars count", strings.Repeat("\xff", 50), 120,
			strings.Repeat("\uFFFD", (120-len(note(30, 120)))/3) + note(30, 120)},
		{"cap smaller than note", strings.Repeat("a", 20), 10, note(10, 10)},
		{"kib wording", strings.Repeat("a", 2048+7), 2048,
			strings.Repeat("a", 2048-len(note(7, 2048))) + note(7, 2048)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ForDisplayLimit(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("ForDisplayLimit(%q, %d)\n got %q\nwant %q", tc.in, tc.max, got, tc.want)
			}
			if _, changed := Clean(tc.in, tc.max); changed != (got != tc.in) {
				t.Errorf("Clean(%q, %d) reports changed=%v, but the text went to %q", tc.in, tc.max, changed, got)
			}
			if tc.max >= len(n100) {
				if len(got) > tc.max {
					t.Errorf("len %d over cap %d", len(got), tc.max)
				}
				if again := ForDisplayLimit(got, tc.max); again != got {
					t.Errorf("second pass changed the text:\n got %q\nwant %q", again, got)
				}
			}
		})
	}
}

func TestTruncationNoteWording(t *testing.T) {
	for _, tc := range []struct {
		over, max int
		want      string
	}{
		{5, MaxOutput, "\n[output truncated: 5 bytes over the 10 MiB limit]"},
		{1, MaxOutput, "\n[output truncated: 1 byte over the 10 MiB limit]"},
		{7, 2048, "\n[output truncated: 7 bytes over the 2 KiB limit]"},
		{3, 100, "\n[output truncated: 3 bytes over the 100-byte limit]"},
	} {
		if got := truncationNote(tc.over, tc.max); got != tc.want {
			t.Errorf("truncationNote(%d, %d) = %q, want %q", tc.over, tc.max, got, tc.want)
		}
	}
}

func TestForDisplayMaxOutput(t *testing.T) {
	const over = 5
	in := strings.Repeat("x", MaxOutput+over)
	got := ForDisplay(in)
	wantNote := "\n[output truncated: 5 bytes over the 10 MiB limit]"
	if !strings.HasSuffix(got, wantNote) {
		t.Fatalf("missing note; tail %q", got[len(got)-80:])
	}
	if len(got) != MaxOutput {
		t.Errorf("len = %d, want %d", len(got), MaxOutput)
	}
	if strings.Count(got, "x") != MaxOutput-len(wantNote) {
		t.Errorf("kept %d bytes of text, want %d", strings.Count(got, "x"), MaxOutput-len(wantNote))
	}

	// The same, through the slow path.
	got = ForDisplay("\x1b[0m" + in)
	if !strings.HasSuffix(got, wantNote) || len(got) != MaxOutput {
		t.Errorf("dirty: len %d, tail %q", len(got), got[len(got)-80:])
	}
	if again := ForDisplay(got); again != got {
		t.Error("truncated output is not stable under a second ForDisplay")
	}
}

func TestForDisplayCleanDoesNotAllocate(t *testing.T) {
	for _, s := range []string{
		"",
		"plain ascii text\nwith lines\tand tabs",
		strings.Repeat("héllo 世界 🙂 שלום ", 100),
		"a\uFFFDb",
	} {
		if n := testing.AllocsPerRun(100, func() { _ = ForDisplay(s) }); n != 0 {
			t.Errorf("ForDisplay(%.20q...) allocated %v times, want 0", s, n)
		}
		if got := ForDisplay(s); got != s {
			t.Errorf("clean text changed: %q", got)
		}
	}
}

// TestCleanPrefixEveryByteEveryOffset checks the word-at-a-time scan
// against the byte table: every byte value, at every position of a word and
// across the word boundary.
func TestCleanPrefixEveryByteEveryOffset(t *testing.T) {
	for b := 0; b < 256; b++ {
		dirty := b >= utf8.RuneSelf || asciiCtl[b]
		for pos := 0; pos < 17; pos++ {
			p := []byte(strings.Repeat("a", 17))
			p[pos] = byte(b)
			want := len(p)
			if dirty {
				want = pos
			}
			if got := cleanPrefix(string(p)); got != want {
				t.Errorf("byte %#x at %d: cleanPrefix = %d, want %d", b, pos, got, want)
			}
		}
	}
}

// TestUnterminatedStringsLinear guards the noTerm shortcut: without it, each
// unterminated introducer would rescan the rest of the input.
func TestUnterminatedStringsLinear(t *testing.T) {
	in := strings.Repeat("\u009d", 1<<18) // 512 KiB of OSC introducers, no terminator
	done := make(chan string, 1)
	go func() { done <- ForDisplay(in) }()
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("got %d bytes, want none", len(got))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ForDisplay is quadratic on unterminated strings")
	}
}

// checkDisplaySafe asserts the properties every output must have.
func checkDisplaySafe(t *testing.T, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8: %q", out)
	}
	for i := 0; i < len(out); i++ {
		b := out[i]
		if (b < 0x20 && b != '\n' && b != '\t') || b == 0x7f {
			t.Fatalf("control byte %#x at %d in %q", b, i, out)
		}
	}
	for i, r := range out {
		if isC1(r) || isBidi(r) {
			t.Fatalf("rune %U at %d in %q", r, i, out)
		}
	}
}

// isSubsequence reports whether a can be made from b by deleting bytes.
func isSubsequence(a, b string) bool {
	for i := 0; i < len(a); i++ {
		j := strings.IndexByte(b, a[i])
		if j < 0 {
			return false
		}
		b = b[j+1:]
	}
	return true
}

func FuzzForDisplay(f *testing.F) {
	for _, tc := range samples {
		f.Add(tc.in, uint16(0))
		f.Add(tc.in, uint16(7))
	}
	f.Add(strings.Repeat("é\x1b[1m", 40), uint16(64))
	f.Add(strings.Repeat("\xff", 100), uint16(90))
	f.Add("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"+strings.Repeat("z", 200), uint16(100))

	f.Fuzz(func(t *testing.T, s string, max16 uint16) {
		out := ForDisplay(s)
		checkDisplaySafe(t, out)
		if len(s) <= MaxOutput/3 && len(out) > MaxOutput {
			t.Fatalf("len %d over MaxOutput", len(out))
		}
		if again := ForDisplay(out); again != out {
			t.Fatalf("not idempotent:\n in %q\nout %q\nagain %q", s, out, again)
		}
		if utf8.ValidString(s) && !isSubsequence(out, s) {
			t.Fatalf("output of valid UTF-8 is not a deletion of the input:\n in %q\nout %q", s, out)
		}

		max := int(max16)
		out = ForDisplayLimit(s, max)
		checkDisplaySafe(t, out)
		if max == 0 {
			if out != ForDisplay(s) {
				t.Fatalf("no cap differs from ForDisplay: %q", out)
			}
			return
		}
		// Sanitized text is at most 3 bytes per input byte (U+FFFD for each
		// invalid byte), which bounds the number in the note.
		if bound := max + len(truncationNote(3*len(s), max)); len(out) > bound {
			t.Fatalf("len %d over %d (cap %d)", len(out), bound, max)
		}
		if len(out) <= max {
			if again := ForDisplayLimit(out, max); again != out {
				t.Fatalf("not idempotent at cap %d:\nout %q\nagain %q", max, out, again)
			}
		} else if max >= 100 {
			t.Fatalf("len %d over cap %d with room for the note", len(out), max)
		}
	})
}

var sink string

func BenchmarkForDisplay(b *testing.B) {
	cleanLine := `{"path": "src/main.go", "line": 42, "text": "fmt.Println(\"héllo, 世界\")"}` + "\n\tok\n"
	clean := strings.Repeat(cleanLine, 2048/len(cleanLine)+1)
	clean = clean[:runeStartAtOrBefore(clean, 2048)]
	dirtyLine := "\x1b[32mINFO\x1b[0m \x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ progress\r\x1b[2K50%\u202e!\n"
	dirty := strings.Repeat(dirtyLine, 2048/len(dirtyLine)+1)[:2048]

	plain := strings.Repeat("all printable ASCII, as most tool output is. ", (64<<10)/45)
	for _, bc := range []struct{ name, in string }{{"clean-2KB", clean}, {"dirty-2KB", dirty}, {"plain-64KB", plain}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				sink = ForDisplay(bc.in)
			}
			// Baseline in the same run: a bare UTF-8 validation, the least any
			// sanitizer must do. The ratio is comparable across machines.
			b.StopTimer()
			elapsed := b.Elapsed()
			start := time.Now()
			ok := true
			for i := 0; i < b.N; i++ {
				ok = utf8.ValidString(bc.in) && ok
			}
			base := time.Since(start)
			if ok && base > 0 {
				b.ReportMetric(float64(elapsed)/float64(base), "x-utf8-validate")
			}
		})
	}
}
