package longframe

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCollector: chunks of any sizes come back whole and in order, in a
// slice of exactly their length that later frames do not write over; the
// blocks kept between frames stay bounded.
func TestCollector(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var c Collector
	var frames, wants [][]byte
	for range 50 {
		var want []byte
		for n := rng.IntN(8); n > 0; n-- {
			chunk := make([]byte, rng.IntN(3*BlockSize))
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			c.Add(chunk)
			want = append(want, chunk...)
			if c.Len() != len(want) {
				t.Fatalf("Len %d, want %d", c.Len(), len(want))
			}
		}
		tail := []byte("}\n")
		got := c.Take(tail)
		want = append(want, tail...)
		if !bytes.Equal(got, want) || cap(got) != len(want) {
			t.Fatalf("took %d bytes (cap %d), want %d", len(got), cap(got), len(want))
		}
		if c.Len() != 0 {
			t.Fatalf("Len %d after Take", c.Len())
		}
		frames, wants = append(frames, got), append(wants, want)
		kept := 0
		for _, b := range c.blocks[:cap(c.blocks)] {
			kept += cap(b)
		}
		if kept > maxKept {
			t.Fatalf("kept %d bytes of blocks, over %d", kept, maxKept)
		}
	}
	for i := range frames {
		if !bytes.Equal(frames[i], wants[i]) {
			t.Fatalf("frame %d changed after later frames", i)
		}
	}
}

// A frame that is given up on (too large, a read error) is dropped.
func TestCollectorReset(t *testing.T) {
	var c Collector
	c.Add(bytes.Repeat([]byte("a"), 3*BlockSize+5))
	c.Reset()
	if got := c.Take([]byte("x")); string(got) != "x" {
		t.Fatalf("after Reset, took %q", got)
	}
}

func ExampleCollector() {
	var c Collector
	c.Add([]byte(`{"jsonrpc":"2.0",`)) // pieces of a line, each valid
	c.Add([]byte(`"method":"ping"`))   // only until the next read
	frame := c.Take([]byte("}"))       // the line's end
	fmt.Println(string(frame))
	// Output: {"jsonrpc":"2.0","method":"ping"}
}

// BenchmarkTake is a 64 KB frame gathered from 4 KB chunks and taken,
// against the same copy into a slice made (and so zeroed) first, the
// way Take made it before.
func BenchmarkTake(b *testing.B) {
	chunk := bytes.Repeat([]byte("a"), 4<<10)
	var c Collector
	b.Run("take", func(b *testing.B) {
		b.SetBytes(64 << 10)
		for b.Loop() {
			for range 16 {
				c.Add(chunk)
			}
			sinkFrame = c.Take([]byte("\n"))
		}
	})
	b.Run("make-and-copy", func(b *testing.B) {
		b.SetBytes(64 << 10)
		for b.Loop() {
			for range 16 {
				c.Add(chunk)
			}
			out := make([]byte, 0, c.n+1)
			for _, blk := range c.blocks {
				out = append(out, blk...)
			}
			sinkFrame = append(out, '\n')
			c.Reset()
		}
	})
}

var sinkFrame []byte
