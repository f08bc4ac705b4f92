//go:build !wasm

package wire

import "encoding/binary"

// runEnd returns the index of the first byte at or after i that ends a
// run of plain string bytes: a quote, a backslash or a control byte, and
// with ascii a byte >= 0x80 as well; len(s) if none does.
//
// Natively, eight bytes are tested at a time by word arithmetic, four
// words a step: several times the speed of a table lookup per byte (the
// WASM build's way, run_wasm.go), which matters for text with a line
// break every few dozen bytes, where each run is short.
func runEnd(s []byte, i int, ascii bool) int {
	var hi uint64
	if ascii {
		hi = highs
	}
	for ; i+32 <= len(s); i += 32 {
		w0, w1 := binary.LittleEndian.Uint64(s[i:]), binary.LittleEndian.Uint64(s[i+8:])
		w2, w3 := binary.LittleEndian.Uint64(s[i+16:]), binary.LittleEndian.Uint64(s[i+24:])
		if special(w0) || special(w1) || special(w2) || special(w3) || (w0|w1|w2|w3)&hi != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if w := binary.LittleEndian.Uint64(s[i:]); special(w) || w&hi != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' || c < 0x20 || (ascii && c >= 0x80) {
			return i
		}
	}
	return i
}
