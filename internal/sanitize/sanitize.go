package sanitize

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// MaxOutput is the default cap on text shown to a person (10 MiB, the
// seeds' MAX_MCP_OUTPUT_SIZE): more than any real tool result, little enough
// that a runaway server cannot flood a terminal or the host's memory.
const MaxOutput = 10 << 20

const (
	bel = 0x07
	can = 0x18
	sub = 0x1a
	esc = 0x1b
)

// asciiCtl marks the single-byte characters that never reach the terminal.
// A table keeps the byte-wise scan to one load and one branch per byte.
var asciiCtl = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = c != '\n' && c != '\t'
	}
	t[0x7f] = true
	return t
}()

// ForDisplay returns s made safe to print on a terminal, capped at
// MaxOutput bytes. It removes:
//
//   - escape sequences: CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or
//     ST), DCS, SOS, PM and APC strings (ESC P, X, ^, _ ... ST), the 8-bit C1
//     forms of those introducers (U+009B, U+009D, U+0090, U+0098, U+009E,
//     U+009F), and the short ESC sequences (ESC 7, ESC ( B, ...);
//   - every other C0 control except '\n' and '\t' (so '\r', '\b' and DEL go
//     too: they let later text overwrite earlier text on screen);
//   - the C1 controls U+0080-U+009F;
//   - the bidi controls U+202A-U+202E, U+2066-U+2069, U+200E, U+200F and
//     U+061C, which make text display in a different order than it is read
//     by programs.
//
// Each invalid UTF-8 byte becomes U+FFFD. A string (OSC, DCS, ...) with no
// terminator loses only its introducer: a terminal would hide the rest, but
// hiding a server's output from the person reviewing it is the greater harm.
//
// Text that is already clean is returned as it is, without allocating, so
// ForDisplay(ForDisplay(s)) == ForDisplay(s) and layering it is cheap.
func ForDisplay(s string) string {
	return ForDisplayLimit(s, MaxOutput)
}

// ForDisplayLimit is ForDisplay with a cap of max bytes instead of
// MaxOutput; max <= 0 means no cap.
//
// Over the cap, the sanitized text is cut at a rune boundary and the line
// "\n[output truncated: N bytes over the <max> limit]" ends it, where N is
// how far the sanitized text exceeded max. The note counts against the cap
// (the result is at most max bytes whenever max leaves room for the note),
// so a second pass at the same cap finds nothing to do: text that crosses
// several sanitizing layers never collects a note per layer.
func ForDisplayLimit(s string, max int) string {
	out, _ := Clean(s, max)
	return out
}

// Clean is ForDisplayLimit that also reports whether the text changed:
// whether it held anything to remove or replace, or went over the cap.
// A caller that records a sanitizer's work asks it here, where the answer
// is known, rather than comparing the text it gets back.
func Clean(s string, max int) (string, bool) {
	i := cleanPrefix(s)
	if i == len(s) {
		if max <= 0 || len(s) <= max {
			return s, false
		}
		n := truncationNote(len(s)-max, max)
		keep := runeStartAtOrBefore(s, max-len(n))
		return s[:keep] + n, true
	}

	c := cleaner{limit: max, noTerm: len(s) + 1}
	size := len(s)
	if max > 0 && size > max {
		size = max
	}
	c.out = make([]byte, 0, size)
	c.emit(s[:i])
	c.run(s, i)

	if max > 0 && c.total > max {
		n := truncationNote(c.total-max, max)
		keep := runeStartAtOrBefore(c.out, max-len(n))
		c.out = append(c.out[:keep], n...)
	}
	return unsafeString(c.out), true
}

// cleanPrefix returns the length of the longest prefix of s that needs no
// work; len(s) means s can be shown as it is.
//
// Most text is mostly printable ASCII, so it is checked 32 bytes at a time
// (four words tested together), then a word at a time. A word with
// anything else in it (often just a '\n') is skipped to its first such
// byte, whose character is looked at alone; then the word-wise scan
// resumes.
func cleanPrefix(s string) int {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	i := 0
	for i < len(b) {
		var d uint64
		switch {
		case i+32 <= len(b):
			w := b[i : i+32]
			d0, d1 := dirty(binary.LittleEndian.Uint64(w)), dirty(binary.LittleEndian.Uint64(w[8:]))
			d2, d3 := dirty(binary.LittleEndian.Uint64(w[16:])), dirty(binary.LittleEndian.Uint64(w[24:]))
			switch {
			case d0|d1|d2|d3 == 0:
				i += 32
				continue
			case d0 != 0:
				d = d0
			case d1 != 0:
				i, d = i+8, d1
			case d2 != 0:
				i, d = i+16, d2
			default:
				i, d = i+24, d3
			}
		case i+8 <= len(b):
			if d = dirty(binary.LittleEndian.Uint64(b[i:])); d == 0 {
				i += 8
				continue
			}
		default:
			d = 1 << 7 // the last bytes: look at each
		}
		// The lowest marked byte is the first that may need work (a
		// borrow only ever marks bytes after it).
		i += bits.TrailingZeros64(d) / 8
		c := b[i]
		if c < utf8.RuneSelf {
			if asciiCtl[c] {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || isC1(r) || isBidi(r) {
			return i
		}
		i += n
	}
	return len(s)
}

// dirty has the high bit set in each byte of w that may need work: one
// >= 0x80, below 0x20, or 0x7f (the classic "has a byte less than n"
// tricks; a borrow may mark a clean byte after a dirty one, never miss
// one).
func dirty(w uint64) uint64 {
	x := w ^ 0x7f*lsb
	return (w | (w-0x20*lsb)&^w | (x-lsb)&^x) & msb
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

func isC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

func isBidi(r rune) bool {
	switch {
	case r < 0x061c:
		return false
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e:
		return true
	case r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// cleaner accumulates the sanitized output. Past the cap it keeps counting
// without storing, because the truncation note reports the full size.
type cleaner struct {
	out   []byte
	limit int  // store at most this many bytes; <= 0: no cap
	full  bool // something was dropped; storing more would leave a gap
	total int  // bytes of sanitized output, stored or not

	// A control string whose body starts at or after noTerm has no
	// terminator: remembering the first failed search keeps a run of
	// unterminated introducers linear instead of quadratic.
	noTerm int
}

func (c *cleaner) emit(p string) {
	if len(p) == 0 {
		return
	}
	c.total += len(p)
	if c.limit <= 0 {
		c.out = append(c.out, p...)
		return
	}
	if c.full {
		return
	}
	if room := c.limit - len(c.out); len(p) > room {
		p = p[:runeStartAtOrBefore(p, room)]
		c.full = true
	}
	c.out = append(c.out, p...)
}

// run sanitizes s from i, where s[i] is the first byte that needs work and
// s[:i] has been emitted. Clean runs between the pieces that need work are
// found by the same word-wise scan as the fast path and emitted whole.
func (c *cleaner) run(s string, i int) {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if b == esc {
				i = c.skipEscape(s, i)
			} else {
				i++ // another C0 control or DEL
			}
		} else {
			switch r, n := utf8.DecodeRuneInString(s[i:]); {
			case r == utf8.RuneError && n == 1:
				c.emit("\uFFFD")
				i++
			case isC1(r):
				i = c.skipC1(s, i, r)
			default: // a bidi control: cleanPrefix stops at nothing else
				i += n
			}
		}
		j := i + cleanPrefix(s[i:])
		c.emit(s[i:j])
		i = j
	}
}

// skipEscape returns the index just past the escape sequence that starts
// with the ESC at s[i].
func (c *cleaner) skipEscape(s string, i int) int {
	j := i + 1
	if j == len(s) {
		return j
	}
	switch s[j] {
	case '[':
		return skipCSI(s, j+1)
	case ']', 'P', 'X', '^', '_':
		return c.skipString(s, j+1)
	}
	// nF (ESC, intermediates 0x20-0x2F, final) and Fp/Fe/Fs (ESC, one byte
	// 0x30-0x7E) sequences. An ESC followed by anything else goes alone.
	k := j
	for k < len(s) && s[k] >= 0x20 && s[k] <= 0x2f {
		k++
	}
	if k < len(s) && s[k] >= 0x30 && s[k] <= 0x7e {
		k++
	}
	return k
}

// skipC1 returns the index just past the C1 control r at s[i] and, for the
// 8-bit introducers, the sequence it starts.
func (c *cleaner) skipC1(s string, i int, r rune) int {
	j := i + utf8.RuneLen(r)
	switch r {
	case 0x9b: // CSI
		return skipCSI(s, j)
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		return c.skipString(s, j)
	}
	return j
}

// skipCSI returns the index past the parameter bytes (0x30-0x3F),
// intermediate bytes (0x20-0x2F) and final byte (0x40-0x7E) starting at j.
// A malformed sequence ends at the first byte that does not fit; whatever
// follows is sanitized as ordinary text.
func skipCSI(s string, j int) int {
	for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3f {
		j++
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7e {
		j++
	}
	return j
}

// skipString returns the index past a control string whose body starts at
// body. Like a terminal, it ends the string at BEL, ST (ESC \ or U+009C),
// CAN or SUB, and abandons it at any other ESC, which then starts a new
// sequence. Without any of those the string is unterminated and only its
// introducer is dropped.
func (c *cleaner) skipString(s string, body int) int {
	if body >= c.noTerm {
		return body
	}
	for k := body; k < len(s); k++ {
		switch s[k] {
		case bel, can, sub:
			return k + 1
		case esc:
			if k+1 < len(s) && s[k+1] == '\\' {
				return k + 2
			}
			return k
		case 0xc2:
			if k+1 < len(s) && s[k+1] == 0x9c {
				return k + 2
			}
		}
	}
	c.noTerm = body
	return body
}

// runeStartAtOrBefore returns the largest rune boundary of s that is <= n
// (and >= 0), so that cutting there never splits a character.
func runeStartAtOrBefore[T string | []byte](s T, n int) int {
	if n >= len(s) {
		return len(s)
	}
	if n <= 0 {
		return 0
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

func truncationNote(over, max int) string {
	unit := " bytes"
	if over == 1 {
		unit = " byte"
	}
	return "\n[output truncated: " + strconv.Itoa(over) + unit + " over the " + sizeName(max) + " limit]"
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + " KiB"
	}
	return strconv.Itoa(n) + "-byte"
}

// unsafeString hands the buffer over as a string without copying it: output
// can be 10 MiB, and b is never written again once it is returned.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
