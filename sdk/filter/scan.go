package filter

// ByteSet is a set of bytes for Scan.
type ByteSet [256]uint8

// NewByteSet makes the set of the bytes of chars.
func NewByteSet(chars string) *ByteSet {
	var s ByteSet
	for i := 0; i < len(chars); i++ {
		s[chars[i]] = 1
	}
	return &s
}

// Add adds the bytes from lo to hi, inclusive.
func (s *ByteSet) Add(lo, hi byte) *ByteSet {
	for c := int(lo); c <= int(hi); c++ {
		s[c] = 1
	}
	return s
}

// Scan returns the index of the first byte at or after i that is in set,
// or len(s). It looks at 32 bytes per iteration: with time limits
// enforced, the host checks for a timeout at every loop iteration of a
// WASM guest, which makes byte-at-a-time loops several times slower than
// they would otherwise be. Use it for the long runs of a text a filter
// skips over.
func Scan[T ~string | ~[]byte](s T, i int, set *ByteSet) int {
	for ; i+32 <= len(s); i += 32 {
		w := s[i : i+32]
		if set[w[0]]|set[w[1]]|set[w[2]]|set[w[3]]|set[w[4]]|set[w[5]]|set[w[6]]|set[w[7]]|
			set[w[8]]|set[w[9]]|set[w[10]]|set[w[11]]|set[w[12]]|set[w[13]]|set[w[14]]|set[w[15]]|
			set[w[16]]|set[w[17]]|set[w[18]]|set[w[19]]|set[w[20]]|set[w[21]]|set[w[22]]|set[w[23]]|
			set[w[24]]|set[w[25]]|set[w[26]]|set[w[27]]|set[w[28]]|set[w[29]]|set[w[30]]|set[w[31]] != 0 {
			break
		}
	}
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		if set[w[0]]|set[w[1]]|set[w[2]]|set[w[3]]|set[w[4]]|set[w[5]]|set[w[6]]|set[w[7]] != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if set[s[i]] != 0 {
			return i
		}
	}
	return len(s)
}
