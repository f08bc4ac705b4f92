package filter

import "math/bits"

// ByteSet is a set of bytes for Scan: c is in the set when s[c] != 0.
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
// or len(s). Use it for the long runs of a text a filter skips over.
//
// It is written for WebAssembly run with a time limit. There, every jump
// a Go function takes (a loop's next iteration, a branch that is taken,
// a call) costs about as much as forty bytes of straight-line work: Go
// compiles each jump to a WebAssembly loop, and the host checks for a
// timeout at every one. So Scan looks at 32 bytes per jump: it makes a
// bit mask of the bytes in the set and finds the first with a
// trailing-zero count, with no branch per byte; the last, partial window
// is read overlapping the one before it.
func Scan[T ~string | ~[]byte](s T, i int, set *ByteSet) int {
	n := len(s)
	if i < 0 {
		i = 0
	}
	if n-i >= 32 {
		for {
			base := min(i, n-32) // the last window ends at n
			w := s[base : base+32]
			m := bit(set[w[0]]) | bit(set[w[1]])<<1 | bit(set[w[2]])<<2 | bit(set[w[3]])<<3 | bit(set[w[4]])<<4 | bit(set[w[5]])<<5 | bit(set[w[6]])<<6 | bit(set[w[7]])<<7 |
				bit(set[w[8]])<<8 | bit(set[w[9]])<<9 | bit(set[w[10]])<<10 | bit(set[w[11]])<<11 | bit(set[w[12]])<<12 | bit(set[w[13]])<<13 | bit(set[w[14]])<<14 | bit(set[w[15]])<<15 |
				bit(set[w[16]])<<16 | bit(set[w[17]])<<17 | bit(set[w[18]])<<18 | bit(set[w[19]])<<19 | bit(set[w[20]])<<20 | bit(set[w[21]])<<21 | bit(set[w[22]])<<22 | bit(set[w[23]])<<23 |
				bit(set[w[24]])<<24 | bit(set[w[25]])<<25 | bit(set[w[26]])<<26 | bit(set[w[27]])<<27 | bit(set[w[28]])<<28 | bit(set[w[29]])<<29 | bit(set[w[30]])<<30 | bit(set[w[31]])<<31
			if m >>= uint(i - base); m != 0 {
				return i + bits.TrailingZeros32(m)
			}
			if i = base + 32; i >= n {
				return n
			}
		}
	}
	for ; i < n; i++ {
		if set[s[i]] != 0 {
			return i
		}
	}
	return n
}

// bit is 1 when a set's entry is non-zero, without a branch.
func bit(v uint8) uint32 { return (uint32(v) + 0xff) >> 8 }
