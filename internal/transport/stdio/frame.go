package stdio

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"github.com/nexus-mcp/nexus/internal/longframe"
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
// Memory is bounded by limit + the bufio buffer size, however long a line the
// peer sends: a frame that cannot fit is rejected as soon as that is known,
// not after the whole line has arrived.
type frameReader struct {
	r     *bufio.Reader
	limit int
	long  longframe.Collector // a frame longer than the bufio buffer
	owned bool                // the last frame is the caller's (a long one)
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
	return &frameReader{r: bufio.NewReaderSize(r, bufSize), limit: limit, noise: noise}
}

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

// wait blocks until some input is buffered, consuming nothing, and returns
// the read error otherwise (a deadline, EOF).
func (f *frameReader) wait() error {
	_, err := f.r.Peek(1)
	return err
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
		f.long.Reset()
		f.collecting = true
	}
	if f.overflows(len(b)) {
		return true, errFrameTooLarge
	}
	f.long.Add(b)
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
	f.long.Reset()
	f.long.Add(head)
	f.collecting = true
	return f.collect()
}

// overflows reports whether n more bytes would take the frame being
// collected past its bound, dropping it if so. Trailing whitespace is
// tolerated up to one buffer beyond the limit, which keeps the bound at
// limit+bufsize without tracking where the whitespace began; collect
// holds the trimmed frame to the limit itself.
func (f *frameReader) overflows(n int) bool {
	if f.long.Len()+n <= f.limit+f.r.Size() {
		return false
	}
	f.long.Reset()
	f.collecting = false
	return true
}

// collect reads the rest of the long frame being collected.
func (f *frameReader) collect() ([]byte, error) {
	for {
		chunk, err := f.r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			f.long.Reset()
			f.collecting = false
			return nil, err
		}
		if f.overflows(len(chunk)) {
			return nil, errFrameTooLarge
		}
		if err != bufio.ErrBufferFull {
			// End of line, or the unterminated last line at EOF.
			f.collecting = false
			line := trimSpace(f.long.Take(chunk))
			if len(line) > f.limit {
				return nil, errFrameTooLarge
			}
			f.owned = true
			return line, nil
		}
		f.long.Add(chunk)
	}
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
