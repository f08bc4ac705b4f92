package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"unsafe"
)

const (
	// frameBufSize is the bufio buffer behind stdout. Almost every MCP
	// message fits, so the common path hands out a slice of this buffer
	// without copying.
	frameBufSize = 64 << 10

	// maxKeptLine caps one stored stdout-noise or stderr line, so a server
	// that prints a megabyte without a newline cannot grow our memory or
	// flood an error message.
	maxKeptLine = 1 << 10
)

// errFrameTooLarge is the frameReader's own signal; Conn turns it into an
// *mcp.FrameTooLargeError naming the server.
var errFrameTooLarge = errors.New("frame too large")

// frameReader splits a byte stream into newline-delimited JSON frames. It is
// separate from Conn so it can be fuzzed and benchmarked without a process.
//
// A frame longer than the bufio buffer is read straight into a buffer of
// its own, which the caller keeps (mcp.FrameOwner): once the buffer has
// handed over the frame's start, the rest goes from the stream into place,
// no copy between. Memory is bounded by limit + the bufio buffer size,
// however long a line the peer sends: a frame that cannot fit is rejected
// as soon as that is known, not after the whole line has arrived.
type frameReader struct {
	r     *bufio.Reader
	src   *source // what r reads
	limit int
	long  []byte // a frame longer than the bufio buffer, read into directly
	hint  int    // the length of the last long frame, to size the next
	owned bool   // the last frame is the caller's (a long one)
	// collecting: the start of a long frame is in long and the rest is
	// still to be read. A direct read that runs out of time leaves it so,
	// and the next read, direct or not, goes on from there.
	collecting bool

	// noise is called with (at most maxKeptLine bytes of) each non-JSON line;
	// the slice is only valid during the call.
	noise    func(line []byte)
	noiseBuf []byte // reused while skipping a long noise line
}

func newFrameReader(r io.Reader, bufSize, limit int, noise func([]byte)) *frameReader {
	src := &source{r: r}
	return &frameReader{r: bufio.NewReaderSize(src, bufSize), src: src, limit: limit, noise: noise}
}

// source is what the buffer reads: the stream, after the bytes a direct
// read of a long frame took past the frame's end and handed back.
type source struct {
	r    io.Reader
	back []byte // handed back, not yet read
	kept []byte // back's storage
}

func (s *source) Read(p []byte) (int, error) {
	if len(s.back) > 0 {
		n := copy(p, s.back)
		s.back = s.back[n:]
		return n, nil
	}
	return s.r.Read(p)
}

// unread hands b back, to be read before what is still handed back from
// before (a read that took only part of it).
func (s *source) unread(b []byte) {
	if len(b) == 0 {
		return
	}
	if len(s.back) == 0 {
		s.kept = append(s.kept[:0], b...)
		s.back = s.kept
		return
	}
	// The rest is in kept: both go to new storage.
	s.kept = append(append(make([]byte, 0, len(b)+len(s.back)), b...), s.back...)
	s.back = s.kept
}

func (s *source) pending() int { return len(s.back) }

// isSpace reports JSON insignificant whitespace; trimming it is always safe
// and removes the '\r' left by CRLF line endings.
func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\n' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func trimLeftSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
}

// isFrameStart: a JSON-RPC message or batch is an object or an array, so any
// other first byte means the server is logging to stdout.
func isFrameStart(b byte) bool { return b == '{' || b == '[' }

// What the read buffer holds, for direct reads.
const (
	nothingBuffered = iota
	partBuffered    // the start of a line
	lineBuffered    // at least one whole line: next returns without reading
)

func (f *frameReader) buffered() int {
	n := f.r.Buffered()
	if n == 0 && f.src.pending() > 0 {
		_, _ = f.r.Peek(min(f.src.pending(), f.r.Size())) // handed back: no read
		n = f.r.Buffered()
	}
	if n == 0 {
		return nothingBuffered
	}
	b, _ := f.r.Peek(n)
	if bytes.IndexByte(b, '\n') < 0 {
		return partBuffered
	}
	return lineBuffered
}

// frameBuffered reports whether the next line is buffered whole and is a
// frame (not noise, which next would skip and then wait).
func (f *frameReader) frameBuffered() bool {
	if f.buffered() != lineBuffered {
		return false
	}
	if f.collecting {
		return true // the end of the frame being collected
	}
	b, _ := f.r.Peek(f.r.Buffered())
	b = trimLeftSpace(b)
	return len(b) > 0 && isFrameStart(b[0])
}

// more waits for input, for a direct read (see Conn.ReadMessageBefore),
// when nothing is buffered: while a long frame is being collected it
// reads straight into the frame and returns it if its line ended;
// otherwise it buffers what comes, consuming nothing. It returns the read
// error (a deadline, EOF) after which the frame, if any, is still being
// collected.
func (f *frameReader) more() ([]byte, error) {
	if f.collecting {
		return f.readLong()
	}
	_, err := f.r.Peek(1)
	return nil, err
}

// gather moves the start of a line that has no end yet from the buffer
// into the frame being collected, or starts collecting one with it,
// reading nothing; so a direct read waits for the rest of a frame, and
// gives up at its deadline, without losing what came, and reads and scans
// each byte once however long the frame. It reports false, consuming
// nothing, when the line is not a frame at all (noise, which line skips).
func (f *frameReader) gather() (bool, error) {
	b, _ := f.r.Peek(f.r.Buffered())
	if !f.collecting {
		head := trimLeftSpace(b)
		if len(head) > 0 && !isFrameStart(head[0]) {
			return false, nil
		}
		_, _ = f.r.Discard(len(b) - len(head)) // whitespace before a frame
		if len(head) == 0 {
			return true, nil
		}
		b = head
		f.start()
	}
	if !f.add(b) {
		return true, errFrameTooLarge
	}
	_, _ = f.r.Discard(len(b))
	return true, nil
}

// next returns the next frame without surrounding whitespace. The slice is
// valid until the next call. It returns io.EOF at a clean end of stream,
// errFrameTooLarge when a frame exceeds the limit (the stream is then out of
// sync and must be abandoned), or the underlying read error.
func (f *frameReader) next() ([]byte, error) {
	for {
		if frame, err := f.line(); frame != nil || err != nil {
			return frame, err
		}
	}
}

// line reads one line: the frame it holds, or nil and no error when it was
// blank or noise. When buffered reports lineBuffered it reads nothing more.
func (f *frameReader) line() ([]byte, error) {
	f.owned = false
	if f.collecting {
		return f.collect()
	}
	chunk, err := f.r.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		head := trimLeftSpace(chunk)
		switch {
		case len(head) == 0:
			// Whitespace before the content is insignificant; the rest
			// of the line can be read as if it started here.
			return nil, nil
		case !isFrameStart(head[0]):
			return nil, f.skipNoise(head)
		}
		return f.longFrame(head)
	case err != nil && (err != io.EOF || len(chunk) == 0):
		// A partial line before a read error is dropped: the stream is
		// broken and the caller reports why.
		return nil, err
	}
	// A whole line (or the unterminated last line at EOF, which is
	// delivered rather than dropped) is in the buffer: zero-copy path.
	line := trimSpace(chunk)
	if len(line) == 0 {
		return nil, nil
	}
	if !isFrameStart(line[0]) {
		f.reportNoise(line)
		return nil, nil
	}
	if len(line) > f.limit {
		return nil, errFrameTooLarge
	}
	return line, nil
}

// longFrame collects a frame longer than the bufio buffer, starting with
// head (already known to be the start of a frame), into a buffer of its
// own that the caller may keep (see mcp.FrameOwner).
func (f *frameReader) longFrame(head []byte) ([]byte, error) {
	f.start()
	if !f.add(head) { // head was read (ReadSlice)
		return nil, errFrameTooLarge
	}
	return f.collect()
}

// start begins collecting a long frame. Its buffer is sized for the last
// long frame (a server tends to send results of like size), so a frame
// like it is read into place with no copy at all; a larger one doubles it.
func (f *frameReader) start() {
	f.collecting = true
	c := 2 * f.r.Size()
	if f.hint > 0 {
		c = f.hint + f.hint/8
	}
	f.long = uninit(min(c, f.bound()))
}

// uninit returns an empty slice with room for n bytes that are not
// zeroed, as bytes.Join and strings.Builder get theirs from the runtime:
// a frame is read straight into its buffer, and clearing a megabyte first
// would be one more pass over it for nothing. Only what was read is ever
// handed out (finish caps the frame's capacity at its length).
func uninit(n int) []byte {
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(b.String()), n)[:0]
}

// bound is the most a frame being collected may hold: the limit, plus
// trailing whitespace up to one buffer beyond it, which keeps the bound
// at limit+bufsize without tracking where the whitespace began (finish
// holds the trimmed frame to the limit itself).
func (f *frameReader) bound() int { return f.limit + f.r.Size() }

// add appends b to the frame being collected; false, dropping the frame,
// when that would take it past the bound.
func (f *frameReader) add(b []byte) bool {
	if len(f.long)+len(b) > f.bound() {
		f.drop()
		return false
	}
	f.grow(len(b))
	f.long = append(f.long, b...)
	return true
}

// grow makes room for n more bytes, doubling (within the bound) rather
// than letting append grow a large frame a quarter at a time.
func (f *frameReader) grow(n int) {
	if cap(f.long)-len(f.long) >= n {
		return
	}
	c := max(min(2*cap(f.long), f.bound()), len(f.long)+n)
	f.long = append(uninit(c), f.long...)
}

func (f *frameReader) drop() {
	f.long = nil
	f.collecting = false
}

// collect reads the rest of the long frame being collected: what the
// buffer holds, then straight from the stream into the frame.
func (f *frameReader) collect() ([]byte, error) {
	for {
		if n := f.r.Buffered(); n > 0 {
			b, _ := f.r.Peek(n)
			end := bytes.IndexByte(b, '\n') + 1
			if end > 0 {
				b = b[:end]
			}
			if !f.add(b) {
				return nil, errFrameTooLarge
			}
			_, _ = f.r.Discard(len(b))
			if end > 0 {
				return f.finish()
			}
		}
		frame, err := f.readLong()
		if err != nil {
			// A partial frame before a read error is dropped: the
			// stream is broken and the caller reports why.
			f.drop()
			return nil, err
		}
		if frame != nil {
			return frame, nil
		}
	}
}

// readLong reads once from the stream straight into the frame being
// collected (nothing is buffered: all of it so far is in the frame), and
// returns the frame if its line ended. It reads as much as the frame's
// buffer has room for (a grown pipe holds 256 KB: that many bytes a
// system call). Bytes read past the line's end are handed back, to be
// read before the stream (source). A read error other than io.EOF leaves the frame being
// collected (a direct read's deadline; collect drops it); EOF ends it, as
// next delivers the unterminated last line.
func (f *frameReader) readLong() ([]byte, error) {
	most := f.bound() - len(f.long)
	if most == 0 {
		f.drop()
		return nil, errFrameTooLarge
	}
	if len(f.long) == cap(f.long) {
		f.grow(min(f.r.Size(), most))
	}
	room := min(most, cap(f.long)-len(f.long))
	have := len(f.long)
	var n int
	var err error
	for tries := 0; n == 0 && err == nil; tries++ {
		if tries == 100 { // as bufio gives up on a reader that says nothing
			return nil, io.ErrNoProgress
		}
		n, err = f.src.Read(f.long[have : have+room])
	}
	got := f.long[have : have+n]
	if end := bytes.IndexByte(got, '\n') + 1; end > 0 {
		f.src.unread(got[end:])
		f.long = f.long[:have+end]
		_, _ = f.r.Peek(min(f.src.pending(), f.r.Size())) // into the buffer, so buffered sees it; no read
		return f.finish()
	}
	f.long = f.long[:have+n]
	if err == io.EOF {
		return f.finish()
	}
	return nil, err
}

// finish hands over the frame collected.
func (f *frameReader) finish() ([]byte, error) {
	line := trimSpace(f.long)
	f.drop()
	if len(line) > f.limit {
		return nil, errFrameTooLarge
	}
	f.hint = len(line)
	if cap(line)-len(line) > len(line)/4 {
		// Sized for a larger frame: the caller keeps the buffer (the
		// result's strings share it), so it gets one of its size.
		line = bytes.Clone(line)
	}
	f.owned = true
	return line[:len(line):len(line)], nil
}

// skipNoise drops the rest of a noise line longer than the buffer, keeping
// only its head for diagnostics.
func (f *frameReader) skipNoise(head []byte) error {
	f.noiseBuf = append(f.noiseBuf[:0], head[:min(len(head), maxKeptLine)]...)
	for {
		chunk, err := f.r.ReadSlice('\n')
		if n := maxKeptLine - len(f.noiseBuf); n > 0 {
			f.noiseBuf = append(f.noiseBuf, chunk[:min(len(chunk), n)]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		f.reportNoise(trimSpace(f.noiseBuf))
		if err == io.EOF {
			return nil // the next read reports EOF again
		}
		return err
	}
}

func (f *frameReader) reportNoise(line []byte) {
	if f.noise != nil && len(line) > 0 {
		f.noise(line[:min(len(line), maxKeptLine)])
	}
}
