package console

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Untrusted text (a server's tool definitions, names and reasons it put
// in a refusal, an agent's name) is shown inert: html/template escapes
// markup, and inert makes visible what would otherwise act unseen on the
// page or on a person reading it: control characters (ANSI escapes) as
// their code, bidi overrides and invisible characters as ⟨U+XXXX⟩, and
// invalid UTF-8 as ⟨bad byte⟩. Long text is cut, saying how much was left
// out, so a 1 MB description does not stall the page.

// maxShown bounds the text of one value a page shows.
const maxShown = 16 << 10

func inert(s string) string {
	return inertN(s, maxShown)
}

func inertN(s string, limit int) string {
	if clean(s) && len(s) <= limit {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), limit) + 16)
	for i := 0; i < len(s); {
		if b.Len() >= limit {
			fmt.Fprintf(&b, " … (%d more bytes not shown)", len(s)-i)
			break
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "⟨bad byte %02X⟩", s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "⟨%s⟩", controlName(r))
		case hidden(r):
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// clean says whether s has nothing inert would change.
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			return cleanSlow(s[i:])
		}
	}
	return true
}

func cleanSlow(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || hidden(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

// hidden is a character that is invisible or reorders text: bidi
// controls (the Trojan Source characters), zero-width ones, C1 controls,
// and other format characters.
func hidden(r rune) bool {
	switch {
	case r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r >= 0x200b && r <= 0x200d, r == 0xfeff, r == 0x2060, r == 0x00ad:
		return true
	case r >= 0xe0000 && r <= 0xe007f: // tag characters: invisible ASCII
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

func controlName(r rune) string {
	switch r {
	case 0x1b:
		return "ESC"
	case 0x7f:
		return "DEL"
	case '\r':
		return "CR"
	case 0:
		return "NUL"
	}
	return fmt.Sprintf("U+%04X", r)
}
