//go:build wasm

package wire

// runEnd returns the index of the first byte at or after i that ends a
// run of plain string bytes: a quote, a backslash or a control byte, and
// with ascii a byte >= 0x80 as well; len(s) if none does.
//
// In WASM every jump costs as much as forty bytes of straight-line work
// (see Scan), so the run is found 64 bytes a jump by table lookups.
func runEnd(s []byte, i int, ascii bool) int {
	if ascii {
		return Scan(s, i, needEscape)
	}
	return Scan(s, i, stringStop)
}

// needEscape holds the bytes a JSON string must be looked at for: control
// bytes, quote, backslash, and every byte of a multi-byte character (to
// check it is valid UTF-8).
var needEscape = NewByteSet("\"\\").Add(0, 0x1f).Add(0x80, 0xff)

// stringStop holds the bytes that end a run inside a JSON string.
var stringStop = NewByteSet("\"\\").Add(0, 0x1f)
