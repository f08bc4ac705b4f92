package httptransport

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Event is one dispatched Server-Sent Event.
type Event struct {
	// Type is the event field; "" means the default type, "message".
	Type string
	// Data is the data field, lines joined with "\n". An event whose data
	// is empty carries no message (SEP-1699 priming events are id-only).
	// The slice belongs to the caller.
	Data []byte
	// ID is the id field; HasID says whether the event had one (an empty
	// id is a valid value: it resets the last event id).
	ID    string
	HasID bool
	// Retry is the reconnection delay from a retry field, 0 if none.
	Retry time.Duration
}

// SSEReader parses a text/event-stream as the WHATWG HTML standard
// describes it: lines end in CRLF, LF or CR; lines starting with ':' are
// comments; a field without a colon has an empty value; one space after the
// colon is dropped; data lines accumulate; a blank line dispatches.
//
// It holds at most one line and one event in memory: a line longer than
// the line limit or an event whose data exceeds the event limit is an
// *mcp.FrameTooLargeError as soon as the limit is passed, so an endless line
// cannot exhaust memory.
type SSEReader struct {
	r        *bufio.Reader
	maxLine  int
	maxEvent int

	line   []byte   // a line longer than what bufio has buffered
	parts  [][]byte // line as it is gathered (see gather)
	size   int      // bytes in parts
	skipLF bool     // the previous line ended in CR: a following LF is part of it
	begun  bool     // the byte-order mark check is done
	// gathered says the last line read is in line (Next may take it over).
	gathered bool
}

// NewSSEReader reads events from r. maxEvent bounds the data of one event
// (<= 0 means mcp.MaxFrameSize); lines may be a little longer, for the field
// name.
func NewSSEReader(r io.Reader, maxEvent int) *SSEReader {
	if maxEvent <= 0 {
		maxEvent = mcp.MaxFrameSize
	}
	// A small buffer: most events are small, and one SSE reader is made
	// per streamed reply, so the buffers are pooled (Release). Longer
	// lines accumulate in line.
	br := sseBufs.Get().(*bufio.Reader)
	br.Reset(r)
	return &SSEReader{r: br, maxLine: maxEvent + 64, maxEvent: maxEvent}
}

var sseBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// Release hands the reader's buffer to the next stream, once the stream
// is done with; the reader must not be used after it. A reader that is
// never released costs only its buffer's allocation.
func (s *SSEReader) Release() {
	s.drop()
	if s.r != nil {
		s.r.Reset(nil)
		sseBufs.Put(s.r)
		s.r = nil
	}
}

// maxRetryField bounds a parsed retry value; the transport caps it far lower.
const maxRetryField = time.Hour

// Next returns the next dispatched event. Blank lines that end an empty
// event are skipped; an event with only an id or a retry field is returned
// (with empty Data) so that the caller can record them. At the end of the
// stream it returns io.EOF; an event not terminated by a blank line is
// discarded, as the standard says.
func (s *SSEReader) Next() (Event, error) {
	var ev Event
	seen := false
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return Event{}, err
		}
		if len(line) == 0 {
			if !seen {
				continue
			}
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment, often a keep-alive
		}
		name, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			name, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(name) {
		case "data":
			seen = true
			n := len(ev.Data) + len(value)
			if hasData {
				n++
			}
			if n > s.maxEvent {
				return Event{}, &mcp.FrameTooLargeError{Limit: s.maxEvent}
			}
			if hasData {
				ev.Data = append(ev.Data, '\n')
			}
			if ev.Data == nil && len(value) >= ownLine && s.gathered {
				// A long line was gathered in s.line: the event takes it
				// over rather than copying it (s.line starts afresh).
				ev.Data, s.line = value[:len(value):len(value)], nil
				hasData = true
				continue
			}
			if ev.Data == nil {
				// Most events are one data line: allocate it exactly.
				ev.Data = make([]byte, 0, len(value))
			}
			ev.Data = append(ev.Data, value...)
			hasData = true
		case "event":
			seen = true
			ev.Type = string(value)
		case "id":
			// The standard ignores ids containing NUL.
			if bytes.IndexByte(value, 0) < 0 {
				seen = true
				ev.ID, ev.HasID = string(value), true
			}
		case "retry":
			if d, ok := parseRetry(value); ok {
				seen = true
				ev.Retry = d
			}
		}
	}
}

func parseRetry(v []byte) (time.Duration, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var ms int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		ms = ms*10 + int64(c-'0')
		if ms > int64(maxRetryField/time.Millisecond) {
			ms = int64(maxRetryField / time.Millisecond)
		}
	}
	return time.Duration(ms) * time.Millisecond, true
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// ownLine is the length from which an event's data takes over the line
// buffer instead of copying it.
const ownLine = 64 << 10

// gather keeps p, part of a line longer than the buffered reader holds,
// in pooled chunks; joined makes the line of them. Appending to one slice
// instead grows a large slice by a quarter at a time, which for a
// megabytes-long line allocates about five times the line.
func (s *SSEReader) gather(p []byte) {
	for len(p) > 0 {
		if k := len(s.parts); k == 0 || len(s.parts[k-1]) == cap(s.parts[k-1]) {
			s.parts = append(s.parts, (*sseChunks.Get().(*[]byte))[:0])
		}
		last := &s.parts[len(s.parts)-1]
		n := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:n]...)
		s.size += n
		p = p[n:]
	}
}

// joined is the gathered line in one slice, s.line (allocated to its size
// when large, so an event can take it over), and returns the chunks to
// the pool.
func (s *SSEReader) joined() []byte {
	if s.size > 1<<20 {
		s.line = make([]byte, 0, s.size)
	}
	for _, c := range s.parts {
		s.line = append(s.line, c...)
	}
	s.drop()
	return s.line
}

var sseChunks = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// readLine returns the next line without its terminator. The slice is valid
// until the next call.
func (s *SSEReader) readLine() ([]byte, error) {
	if !s.begun {
		s.begun = true
		if b, err := s.r.Peek(3); err == nil && bytes.Equal(b, bom) {
			s.r.Discard(3)
		}
	}
	if cap(s.line) > 1<<20 {
		s.line = nil // one huge line should not pin its buffer
	}
	s.line = s.line[:0]
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				partial := s.size > 0
				s.drop()
				if errors.Is(err, io.EOF) && partial {
					return nil, io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
		avail, _ := s.r.Peek(s.r.Buffered())
		if s.skipLF {
			s.skipLF = false
			if avail[0] == '\n' {
				s.r.Discard(1)
				continue
			}
		}
		i := indexEOL(avail)
		if i < 0 {
			if s.size+len(avail) > s.maxLine {
				s.drop()
				return nil, &mcp.FrameTooLargeError{Limit: s.maxEvent}
			}
			s.gather(avail)
			s.r.Discard(len(avail))
			continue
		}
		if s.size+i > s.maxLine {
			s.drop()
			return nil, &mcp.FrameTooLargeError{Limit: s.maxEvent}
		}
		n := i + 1
		if avail[i] == '\r' {
			if i+1 < len(avail) {
				if avail[i+1] == '\n' {
					n++
				}
			} else {
				s.skipLF = true // the LF, if any, is not read yet
			}
		}
		var line []byte
		s.gathered = s.size > 0
		if !s.gathered {
			// The whole line is buffered: no copy. Discard does not move
			// the buffer, so the slice stays valid until the next read.
			line = avail[:i]
		} else {
			s.gather(avail[:i])
			line = s.joined()
		}
		s.r.Discard(n)
		return line, nil
	}
}

// drop forgets a line gathered in part.
func (s *SSEReader) drop() {
	for i, c := range s.parts {
		sseChunks.Put(&c)
		s.parts[i] = nil
	}
	s.parts, s.size = s.parts[:0], 0
}

// indexEOL finds the first CR or LF with two vectorized scans rather than
// one byte loop: event lines can be megabytes long.
func indexEOL(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	head := b
	if lf >= 0 {
		head = b[:lf]
	}
	if cr := bytes.IndexByte(head, '\r'); cr >= 0 {
		return cr
	}
	return lf
}
