package wire

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
// or len(s): for the long runs of a text a WASM guest skips over (the Go
// guest SDK's string decoder, and its authors through sdk/filter.Scan).
//
// It is written for WebAssembly run with a time limit. There, every jump
// a Go function takes (a loop's next iteration, a branch that is taken,
// a call) costs about as much as forty bytes of straight-line work: Go
// compiles each jump to a WebAssembly loop, and the host checks for a
// timeout at every one. So Scan looks at 64 bytes per jump: it makes a
// bit mask of the bytes in the set and finds the first with a
// trailing-zero count, with no branch per byte; the last, partial window
// is read overlapping the one before it.
func Scan[T ~string | ~[]byte](s T, i int, set *ByteSet) int {
	n := len(s)
	if i < 0 {
		i = 0
	}
	if n-i >= 64 {
		for {
			base := min(i, n-64) // the last window ends at n
			w := s[base : base+64]
			m := bit64(set[w[0]]) | bit64(set[w[1]])<<1 | bit64(set[w[2]])<<2 | bit64(set[w[3]])<<3 | bit64(set[w[4]])<<4 | bit64(set[w[5]])<<5 | bit64(set[w[6]])<<6 | bit64(set[w[7]])<<7 |
				bit64(set[w[8]])<<8 | bit64(set[w[9]])<<9 | bit64(set[w[10]])<<10 | bit64(set[w[11]])<<11 | bit64(set[w[12]])<<12 | bit64(set[w[13]])<<13 | bit64(set[w[14]])<<14 | bit64(set[w[15]])<<15 |
				bit64(set[w[16]])<<16 | bit64(set[w[17]])<<17 | bit64(set[w[18]])<<18 | bit64(set[w[19]])<<19 | bit64(set[w[20]])<<20 | bit64(set[w[21]])<<21 | bit64(set[w[22]])<<22 | bit64(set[w[23]])<<23 |
				bit64(set[w[24]])<<24 | bit64(set[w[25]])<<25 | bit64(set[w[26]])<<26 | bit64(set[w[27]])<<27 | bit64(set[w[28]])<<28 | bit64(set[w[29]])<<29 | bit64(set[w[30]])<<30 | bit64(set[w[31]])<<31 |
				bit64(set[w[32]])<<32 | bit64(set[w[33]])<<33 | bit64(set[w[34]])<<34 | bit64(set[w[35]])<<35 | bit64(set[w[36]])<<36 | bit64(set[w[37]])<<37 | bit64(set[w[38]])<<38 | bit64(set[w[39]])<<39 |
				bit64(set[w[40]])<<40 | bit64(set[w[41]])<<41 | bit64(set[w[42]])<<42 | bit64(set[w[43]])<<43 | bit64(set[w[44]])<<44 | bit64(set[w[45]])<<45 | bit64(set[w[46]])<<46 | bit64(set[w[47]])<<47 |
				bit64(set[w[48]])<<48 | bit64(set[w[49]])<<49 | bit64(set[w[50]])<<50 | bit64(set[w[51]])<<51 | bit64(set[w[52]])<<52 | bit64(set[w[53]])<<53 | bit64(set[w[54]])<<54 | bit64(set[w[55]])<<55 |
				bit64(set[w[56]])<<56 | bit64(set[w[57]])<<57 | bit64(set[w[58]])<<58 | bit64(set[w[59]])<<59 | bit64(set[w[60]])<<60 | bit64(set[w[61]])<<61 | bit64(set[w[62]])<<62 | bit64(set[w[63]])<<63
			if m >>= uint(i - base); m != 0 {
				return i + bits.TrailingZeros64(m)
			}
			if i = base + 64; i >= n {
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

// bit64 is 1 when a set's entry is non-zero, without a branch.
func bit64(v uint8) uint64 { return (uint64(v) + 0xff) >> 8 }
