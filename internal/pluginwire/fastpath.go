package pluginwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/protobuf/proto"
)

// The Decide fast path. A Decide over the gRPC Decisions stream passes
// through five goroutines and two HTTP/2 framers on each side; on a
// loaded machine their wake-ups are most of a small call's round trip.
// So the host also offers a plain Unix socket: it makes a private
// directory, names a socket in it and a random token in the plugin's
// environment (DecideSocketEnv, DecideTokenEnv), and a plugin built with
// this SDK listens there. Each connection starts with the token and then
// carries one call at a time, request then response, each a frame: a
// 4-byte big-endian length and that many bytes. A request frame holds the
// kind (FramePolicy or FrameSanitizer), the deadline (8 bytes, Unix
// nanoseconds, 0 for none) and a DecideRequest; a response frame holds a
// DecideResponse, whose code and error report a failed call as the
// Decisions stream does. A host that finds no socket (a plugin built with
// an older SDK, or one reattached for debugging) uses the stream.
const (
	DecideSocketEnv = "NEXUS_PLUGIN_DECIDE_SOCKET"
	DecideTokenEnv  = "NEXUS_PLUGIN_DECIDE_TOKEN"

	// DecideTokenSize is the token's size in bytes (its environment
	// value is hex).
	DecideTokenSize = 32

	FramePolicy    byte = 'p'
	FrameSanitizer byte = 's'
)

// AppendDecideRequest appends a request frame to b.
func AppendDecideRequest(b []byte, kind byte, deadline time.Time, req *DecideRequest) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0, kind)
	var dl int64
	if !deadline.IsZero() {
		dl = deadline.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(dl))
	b, err := proto.MarshalOptions{}.MarshalAppend(b, req)
	if err != nil {
		return b[:start], err
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

// ParseDecideRequest reads a request frame's body (as ReadFrame returns it).
func ParseDecideRequest(body []byte) (kind byte, deadline time.Time, req *DecideRequest, err error) {
	if len(body) < 9 {
		return 0, time.Time{}, nil, errors.New("decide request frame too short")
	}
	kind = body[0]
	if kind != FramePolicy && kind != FrameSanitizer {
		return 0, time.Time{}, nil, fmt.Errorf("decide request frame of unknown kind %q", kind)
	}
	if dl := int64(binary.BigEndian.Uint64(body[1:9])); dl != 0 {
		deadline = time.Unix(0, dl)
	}
	req = &DecideRequest{}
	if err := proto.Unmarshal(body[9:], req); err != nil {
		return 0, time.Time{}, nil, fmt.Errorf("decide request frame: %w", err)
	}
	return kind, deadline, req, nil
}

// AppendDecideResponse appends a response frame to b.
func AppendDecideResponse(b []byte, resp *DecideResponse) ([]byte, error) {
	start := len(b)
	b = append(b, 0, 0, 0, 0)
	b, err := proto.MarshalOptions{}.MarshalAppend(b, resp)
	if err != nil {
		return b[:start], err
	}
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b, nil
}

// ParseDecideResponse reads a response frame's body.
func ParseDecideResponse(body []byte) (*DecideResponse, error) {
	resp := &DecideResponse{}
	if err := proto.Unmarshal(body, resp); err != nil {
		return nil, fmt.Errorf("decide response frame: %w", err)
	}
	return resp, nil
}

// ErrFrameTooLarge is ReadFrame's answer to a frame over its limit.
var ErrFrameTooLarge = errors.New("decide frame over the size limit")

// ReadFrame reads one frame from r and returns its body, in buf when it
// fits. A frame over max bytes is refused before it is read.
func ReadFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n > max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
