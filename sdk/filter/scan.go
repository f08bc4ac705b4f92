package filter

import "github.com/nexus-mcp/nexus/internal/wire"

// ByteSet is a set of bytes for Scan: c is in the set when s[c] != 0.
// NewByteSet makes one, Add adds a range.
type ByteSet = wire.ByteSet

// NewByteSet makes the set of the bytes of chars.
func NewByteSet(chars string) *ByteSet { return wire.NewByteSet(chars) }

// Scan returns the index of the first byte at or after i that is in set,
// or len(s). Use it for the long runs of a text a filter skips over.
//
// It is written for WebAssembly run with a time limit. There, every jump
// a Go function takes (a loop's next iteration, a branch that is taken,
// a call) costs about as much as forty bytes of straight-line work: Go
// compiles each jump to a WebAssembly loop, and the host checks for a
// timeout at every one. So Scan looks at 64 bytes per jump, with no branch
// per byte. It is the scan the SDK's own JSON decoding uses.
func Scan[T ~string | ~[]byte](s T, i int, set *ByteSet) int { return wire.Scan(s, i, set) }
