package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// readAll drains a frameReader, copying frames (they alias its buffer).
func readAll(t testing.TB, in string, bufSize, limit int) (frames, noise []string, err error) {
	t.Helper()
	fr := newFrameReader(strings.NewReader(in), bufSize, limit, func(l []byte) { noise = append(noise, string(l)) })
	for i := 0; ; i++ {
		if i > len(in)+2 {
			t.Fatalf("frameReader did not terminate on %q", in)
		}
		f, err := fr.next()
		if err != nil {
			return frames, noise, err
		}
		frames = append(frames, string(f))
	}
}

func TestFrameReader(t *testing.T) {
	long := `{"x":"` + strings.Repeat("a", 200) + `"}`
	tests := []struct {
		name   string
		in     string
		limit  int
		frames []string
		noise  []string
		err    error
	}{
		{name: "plain", in: "{\"a\":1}\n[1]\n", frames: []string{`{"a":1}`, `[1]`}, err: io.EOF},
		{name: "crlf", in: "{\"a\":1}\r\n\r\n[2]\r\n", frames: []string{`{"a":1}`, `[2]`}, err: io.EOF},
		{name: "blank and whitespace", in: "\n   \n\t\r\n{}\n  \n", frames: []string{`{}`}, err: io.EOF},
		{name: "surrounding spaces", in: "  {\"a\":1}  \r\n", frames: []string{`{"a":1}`}, err: io.EOF},
		{name: "noise", in: "starting up\n{}\n> ready\n", frames: []string{`{}`}, noise: []string{"starting up", "> ready"}, err: io.EOF},
		{name: "no trailing newline", in: "{}\n{\"b\":2}", frames: []string{`{}`, `{"b":2}`}, err: io.EOF},
		{name: "long frame", in: long + "\r\n{}\n", frames: []string{long, `{}`}, err: io.EOF},
		{name: "long frame unterminated", in: "{}\n" + long, frames: []string{`{}`, long}, err: io.EOF},
		{name: "long noise", in: strings.Repeat("n", 3000) + "\n{}\n", frames: []string{`{}`}, noise: []string{strings.Repeat("n", maxKeptLine)}, err: io.EOF},
		{name: "long leading whitespace", in: strings.Repeat(" ", 100) + "{}\n" + strings.Repeat(" ", 100) + "\n", frames: []string{`{}`}, err: io.EOF},
		{name: "frame at limit", in: `{"a":"12"}` + "\r\n", limit: 10, frames: []string{`{"a":"12"}`}, err: io.EOF},
		{name: "short frame over limit", in: `{"a":"123"}` + "\n", limit: 10, err: errFrameTooLarge},
		{name: "long frame over limit", in: "{}\n" + long + "\n", limit: 100, frames: []string{`{}`}, err: errFrameTooLarge},
		{name: "empty", in: "", err: io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = 1 << 20
			}
			frames, noise, err := readAll(t, tc.in, 16, limit)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if strings.Join(frames, "\x00") != strings.Join(tc.frames, "\x00") {
				t.Errorf("frames = %q, want %q", frames, tc.frames)
			}
			if strings.Join(noise, "\x00") != strings.Join(tc.noise, "\x00") {
				t.Errorf("noise = %q, want %q", noise, tc.noise)
			}
		})
	}
}

// TestFrameReaderBounded checks the memory bound: an endless line is rejected
// after about limit+bufsize bytes, not read to the end.
func TestFrameReaderBounded(t *testing.T) {
	const limit = 1 << 20
	r := &countingReader{r: io.MultiReader(strings.NewReader("{"), infinite('a'))}
	fr := newFrameReader(r, frameBufSize, limit, nil)
	if _, err := fr.next(); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("err = %v, want errFrameTooLarge", err)
	}
	if r.n > limit+2*frameBufSize {
		t.Errorf("read %d bytes before rejecting; want at most %d", r.n, limit+2*frameBufSize)
	}
	if n := cap(fr.long); n != 0 {
		t.Errorf("kept %d collected bytes after the refusal", n)
	}
}

type infinite byte

func (b infinite) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"id\":1}\n[1,2]\n"), uint16(64))
	f.Add([]byte("{\"a\":1}\r\n\r\n[2]\r\n"), uint16(64))
	f.Add([]byte("\n \n\t\r\n{}\n"), uint16(8))
	f.Add([]byte("npm WARN something\n{}\n> server ready\n"), uint16(64))
	f.Add([]byte("{\""+strings.Repeat("x", 100)+"\"}\n"), uint16(50))
	f.Add([]byte("{\""+strings.Repeat("x", 100)+"\"}\r\n{}"), uint16(200))
	f.Add([]byte("{}\n{\"no\":\"newline\"}"), uint16(64))
	f.Add([]byte(strings.Repeat(" ", 40)+"{}"+strings.Repeat(" \r", 30)+"\n"), uint16(4))
	f.Add([]byte("{}\r\r\n[]\r"), uint16(2))
	f.Add([]byte("{\""+strings.Repeat("x", 100)+"\"}\n  {}\n"), uint16(0x8000|200))
	f.Add([]byte(strings.Repeat(" ", 40)+"{\"a\":\""+strings.Repeat("y", 60)+"\"}\nnoise "+strings.Repeat("n", 40)+"\n[]"), uint16(0x8000|50))
	f.Add([]byte("{\""+strings.Repeat("x", 30)+"\"}\n{\"b\":1}\n[2]\n{\"c\":\""+strings.Repeat("z", 40)+"\"}\n{}"), uint16(0x4000|200))
	f.Add([]byte("{\""+strings.Repeat("x", 30)+"\"}\n{\"b\":1}\n[2]\n  \nnoise\n{\"c\":\""+strings.Repeat("z", 40)+"\"}\n{}"), uint16(0xc000|200))
	// A long frame sizes the next one's buffer: the next is read with
	// more after it than the buffer holds, and a long one follows while
	// some of that still waits.
	f.Add([]byte(`{"a":"`+strings.Repeat("a", 92)+`"}`+"\n"+`{"b":"`+strings.Repeat("b", 30)+`"}`+"\n"+`{"c":"`+strings.Repeat("c", 15)+`"}`+"\n"+
		`{"d":"`+strings.Repeat("d", 61)+`"}`+"\n"+`{"e":"`+strings.Repeat("e", 48)+`"}`+"\n"), uint16(0x4000|4095))
	f.Fuzz(func(t *testing.T, data []byte, lim uint16) {
		limit := int(lim%4096) + 1
		// The high bit reads the way Conn.ReadMessageBefore does, from a
		// source that times out at every other read.
		direct := lim&0x8000 != 0
		// Bits 12-14 choose how much a read gives: reads longer than
		// the buffer let a long frame's read take more past its end
		// than the buffer holds.
		src := &flakyReader{data: data, flaky: direct, chunk: []int{7, 1, 33, 1000, 100, 16, 2, 500}[lim>>12&7]}
		var noise [][]byte
		fr := newFrameReader(src, 16, limit, func(l []byte) {
			if len(l) == 0 || len(l) > maxKeptLine {
				t.Fatalf("noise line of %d bytes", len(l))
			}
			noise = append(noise, bytes.Clone(l))
		})
		want := referenceFrames(data)
		for i := 0; ; i++ {
			if i > len(data)+2 {
				t.Fatal("frameReader does not terminate")
			}
			next := fr.next
			if direct {
				next = func() ([]byte, error) { return directNext(fr, src) }
			}
			frame, err := next()
			if err != nil {
				if errors.Is(err, errFrameTooLarge) {
					// Allowed only for a frame over the limit, or (the
					// documented imprecision) one whose trailing whitespace
					// takes the raw line over it.
					if len(want) == 0 || (len(want[0].frame) <= limit && want[0].raw <= limit) {
						t.Fatalf("spurious errFrameTooLarge (limit %d); next expected %+v", limit, want)
					}
					return
				}
				if err != io.EOF {
					t.Fatalf("unexpected error %v", err)
				}
				if len(want) != 0 {
					t.Fatalf("EOF but still expected %d frames", len(want))
				}
				return
			}
			if len(frame) > limit {
				t.Fatalf("frame of %d bytes exceeds limit %d", len(frame), limit)
			}
			if n := len(frame); n == 0 || frame[n-1] == '\r' || frame[n-1] == '\n' || isSpace(frame[0]) {
				t.Fatalf("frame %q is empty or not trimmed", frame)
			}
			if len(want) == 0 || string(frame) != want[0].frame {
				t.Fatalf("frame %q, want next of %+v", frame, want)
			}
			want = want[1:]
		}
	})
}

// errTick is flakyReader's timeout.
var errTick = errors.New("deadline")

// flakyReader gives data out chunk bytes at a time; when flaky, every
// other read times out instead.
type flakyReader struct {
	data  []byte
	chunk int
	flaky bool
	tick  bool
}

func (r *flakyReader) Read(p []byte) (int, error) {
	if r.flaky {
		if r.tick = !r.tick; r.tick {
			return 0, errTick
		}
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.chunk)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// directNext reads the next frame as Conn.ReadMessageBefore does, timing
// out and trying again, and falls back to next (without timeouts) where
// it gives up, as the Peer then calls ReadMessage.
func directNext(fr *frameReader, src *flakyReader) ([]byte, error) {
	fallback := func() ([]byte, error) {
		src.flaky = false
		defer func() { src.flaky = true }()
		return fr.next()
	}
	for {
		switch fr.buffered() {
		case lineBuffered:
			frame, err := fr.line()
			if err != nil || frame != nil {
				return frame, err
			}
			continue
		case partBuffered:
			ok, err := fr.gather()
			if err != nil {
				return nil, err
			}
			if !ok {
				return fallback()
			}
			continue
		}
		frame, err := fr.more()
		if errors.Is(err, errFrameTooLarge) {
			return nil, err
		}
		if err != nil {
			if err == errTick {
				continue
			}
			return fallback()
		}
		if frame != nil {
			return frame, nil
		}
	}
}

type refFrame struct {
	frame string
	raw   int // length from the first non-space byte to the end of the line
}

// referenceFrames is the obvious, unbounded implementation of the framing
// rules, used to check the streaming one.
func referenceFrames(data []byte) []refFrame {
	var out []refFrame
	for _, line := range bytes.Split(data, []byte("\n")) {
		l := trimSpace(line)
		if len(l) > 0 && isFrameStart(l[0]) {
			out = append(out, refFrame{string(l), len(trimLeftSpace(line))})
		}
	}
	return out
}

// repeatReader replays one buffer forever without allocating.
type repeatReader struct {
	data []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.data[r.off:])
		n += c
		r.off = (r.off + c) % len(r.data)
	}
	return n, nil
}

func BenchmarkFrameReader(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"hello world"}]}}` + "\n")
	fr := newFrameReader(&repeatReader{data: bytes.Repeat(line, 100)}, frameBufSize, 1<<20, nil)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := fr.next()
		if err != nil || len(f) != len(line)-1 {
			b.Fatalf("frame %q, err %v", f, err)
		}
	}
}

// A frame longer than the buffer is the caller's (owned, and not written
// over by the frames after it); one read from the buffer is not.
func TestFrameReaderOwnsLongFrames(t *testing.T) {
	long1 := `{"x":"` + strings.Repeat("a", 300) + `"}`
	long2 := `{"y":"` + strings.Repeat("b", 300) + `"}`
	fr := newFrameReader(strings.NewReader("{}\n"+long1+"\n"+long2+"\n{}\n"), 64, 1<<20, nil)
	var got [][]byte
	var owned []bool
	for {
		f, err := fr.next()
		if err != nil {
			break
		}
		got, owned = append(got, f), append(owned, fr.owned)
	}
	if want := []bool{false, true, true, false}; len(owned) != 4 || owned[0] != want[0] || !owned[1] || !owned[2] || owned[3] {
		t.Fatalf("owned = %v, want %v", owned, want)
	}
	if string(got[1]) != long1 || string(got[2]) != long2 {
		t.Fatalf("long frames changed after later reads: %.40q, %.40q", got[1], got[2])
	}
	for _, f := range got[1:3] {
		if cap(f) != len(f) { // the rest of a buffer read into is not zeroed
			t.Errorf("a long frame of %d bytes has capacity %d", len(f), cap(f))
		}
	}
}

// A long frame is read into a buffer sized by the one before: frames
// much shorter and longer than that one, and the frames read with a long
// frame's end, come through whole, with no capacity past their end.
func TestFrameReaderLongSizes(t *testing.T) {
	frame := func(n int) string { return `{"x":"` + strings.Repeat("a", n) + `"}` }
	var in strings.Builder
	var want []string
	for _, n := range []int{5000, 300, 5000, 20000, 40, 20000, 70} {
		want = append(want, frame(n))
		in.WriteString(frame(n) + "\n")
	}
	fr := newFrameReader(&pipeReader{repeatReader{data: []byte(in.String())}}, 256, 1<<20, nil)
	for i, w := range want {
		f, err := fr.next()
		if err != nil || string(f) != w {
			t.Fatalf("frame %d: %.20q... (%d bytes), err %v; want %d bytes", i, f, len(f), err, len(w))
		}
		if fr.owned && cap(f) != len(f) {
			t.Errorf("frame %d: capacity %d for %d bytes", i, cap(f), len(f))
		}
	}
}

// pipeReader gives out a buffer over and over, at most a pipe's capacity
// (64 KB) a read, as a server's stdout does.
type pipeReader struct{ repeatReader }

func (r *pipeReader) Read(p []byte) (int, error) { return r.repeatReader.Read(p[:min(len(p), 64<<10)]) }

// BenchmarkFrameReaderLong: frames of 64 KB and 1 MB, each longer than
// the buffer, read from a pipe's worth at a time.
func BenchmarkFrameReaderLong(b *testing.B) {
	for _, n := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKB", n>>10), func(b *testing.B) {
			line := append([]byte(`{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"`), bytes.Repeat([]byte("a"), n)...)
			line = append(line, "\"}]}}\n"...)
			fr := newFrameReader(&pipeReader{repeatReader{data: line}}, frameBufSize, 2<<20, nil)
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := fr.next()
				if err != nil || len(f) != len(line)-1 {
					b.Fatalf("frame of %d bytes, err %v", len(f), err)
				}
			}
		})
	}
}

// chunkReader reads at most n bytes a call (n = 0: as much as asked).
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.n > 0 && len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

// Runs of frames shorter and longer than the buffer, read in pieces of
// many sizes: a long frame's direct read takes bytes past its end, often
// more than the buffer holds, and the frames after it (long ones too,
// read while some of those bytes still wait) come through whole, in
// order.
func TestFrameReaderHandBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var in strings.Builder
		for i := range 1 + rng.IntN(8) {
			in.WriteString(`{"` + string(rune('a'+i)) + `":"` + strings.Repeat("x", rng.IntN(120)) + "\"}\n")
		}
		chunk := []int{0, 1, 7, 16, 33, 100, 1000}[rng.IntN(7)]
		fr := newFrameReader(&chunkReader{strings.NewReader(in.String()), chunk}, 16, 1<<20, nil)
		for _, want := range referenceFrames([]byte(in.String())) {
			if f, err := fr.next(); err != nil || string(f) != want.frame {
				t.Fatalf("reads of %d: frame %q, err %v; want %q\ninput %q", chunk, f, err, want.frame, in.String())
			}
		}
		if _, err := fr.next(); err != io.EOF {
			t.Fatalf("after the last frame: %v, want EOF", err)
		}
	}
}
