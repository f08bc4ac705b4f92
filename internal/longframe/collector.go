package longframe

import "bytes"

// BlockSize is the size of each block a Collector copies chunks into.
const BlockSize = 64 << 10

// maxKept bounds the blocks a Collector keeps between frames, so one huge
// frame does not pin its size in memory for the rest of a session.
const maxKept = 1 << 20

// Collector gathers one frame from chunks (each valid only until the
// next read of the underlying buffer) and returns it as one slice. The
// zero value is ready to use. It is not safe for concurrent use.
type Collector struct {
	blocks [][]byte // filled blocks, then the one being filled
	n      int      // bytes collected
	parts  [][]byte // Take's scratch: the blocks and the tail
}

// Len is the number of bytes collected since the last Take or Reset.
func (c *Collector) Len() int { return c.n }

// Add copies chunk into the collector.
func (c *Collector) Add(chunk []byte) {
	c.n += len(chunk)
	for len(chunk) > 0 {
		if k := len(c.blocks); k == 0 || len(c.blocks[k-1]) == cap(c.blocks[k-1]) {
			c.next()
		}
		last := &c.blocks[len(c.blocks)-1]
		m := min(len(chunk), cap(*last)-len(*last))
		*last = append(*last, chunk[:m]...)
		chunk = chunk[m:]
	}
}

// next makes room for one more block, reusing a kept one past the end.
func (c *Collector) next() {
	k := len(c.blocks)
	if k < cap(c.blocks) {
		if b := c.blocks[:k+1][k]; b != nil {
			c.blocks = append(c.blocks, b[:0])
			return
		}
	}
	c.blocks = append(c.blocks, make([]byte, 0, BlockSize))
}

// Take returns the collected bytes followed by tail, in a new slice of
// exactly that length that the caller owns, and resets the collector.
//
// bytes.Join allocates the slice without zeroing it first (every byte is
// about to be written): for a frame of 64 KB that is a tenth of what the
// host spends on it.
func (c *Collector) Take(tail []byte) []byte {
	if len(c.blocks) == 0 {
		return append(make([]byte, 0, len(tail)), tail...)
	}
	parts := append(append(c.parts[:0], c.blocks...), tail)
	out := bytes.Join(parts, nil)
	clear(parts) // the tail is the caller's
	c.parts = parts[:0]
	c.Reset()
	return out
}

// Reset drops what was collected, keeping blocks up to a bound for the
// next frame.
func (c *Collector) Reset() {
	kept := min(len(c.blocks), maxKept/BlockSize)
	clear(c.blocks[kept:])
	c.blocks = c.blocks[:0]
	c.n = 0
}
