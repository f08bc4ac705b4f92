package plugin

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/hex"
	"io"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
)

// The plugin's side of the Decide fast path (see internal/pluginwire's
// fastpath.go for the protocol and why it exists). Authors see none of it:
// their Decider answers the same calls either way.

// decideServers are what a fast-path call is answered by: the same
// deciders gRPC serves, so instances Configure made over gRPC are found.
type decideServers struct {
	policy, sanitizer atomic.Pointer[deciders]
}

const (
	// maxFastConns bounds the connections a plugin serves at once (the
	// host opens one per call in flight, and bounds them itself).
	maxFastConns = 256
	// fastTokenWait bounds how long a new connection may take to present
	// the token.
	fastTokenWait = 10 * time.Second
	// fastKeep is the largest frame buffer a connection keeps between
	// calls.
	fastKeep = 64 << 10
)

// serveFastPath listens on the socket the host named in the environment,
// if it named one, and returns the listener (nil if none); without it (an
// older host, Debug) decisions go over gRPC as before.
func serveFastPath(s *decideServers) net.Listener {
	path, tok := os.Getenv(pb.DecideSocketEnv), os.Getenv(pb.DecideTokenEnv)
	// Read once, and not handed down to processes the plugin starts.
	os.Unsetenv(pb.DecideSocketEnv)
	os.Unsetenv(pb.DecideTokenEnv)
	if path == "" || runtime.GOOS == "windows" {
		return nil
	}
	token, err := hex.DecodeString(tok)
	if err != nil || len(token) != pb.DecideTokenSize {
		logger.Warn("the host's Decide fast path token is malformed; decisions go over gRPC", "env", pb.DecideTokenEnv)
		return nil
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		logger.Warn("cannot listen for the host's Decide fast path; decisions go over gRPC", "error", err)
		return nil
	}
	go acceptFast(ln, token, s)
	return ln
}

// acceptFast serves each connection on a goroutine of its own. It ends
// with the process (the host removes the socket's directory).
func acceptFast(ln net.Listener, token []byte, s *decideServers) {
	slots := make(chan struct{}, maxFastConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			c.Close() // over the bound: the host's call goes over gRPC
			continue
		}
		go func() {
			defer func() { <-slots }()
			serveFastConn(c, token, s)
		}()
	}
}

// serveFastConn checks the token, then answers calls until the host
// closes the connection or breaks the protocol.
func serveFastConn(c net.Conn, token []byte, s *decideServers) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(fastTokenWait))
	got := make([]byte, len(token))
	if _, err := io.ReadFull(c, got); err != nil || subtle.ConstantTimeCompare(got, token) != 1 {
		return
	}
	c.SetReadDeadline(time.Time{})
	r := bufio.NewReaderSize(c, 4<<10)
	var in, out []byte
	for {
		body, err := pb.ReadFrame(r, in, pb.MaxGRPCMessage)
		if err != nil {
			return
		}
		out, err = pb.AppendDecideResponse(out[:0], s.decide(body))
		if err != nil {
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
		if in = body; cap(in) > fastKeep {
			in = nil
		}
		if cap(out) > fastKeep {
			out = nil
		}
	}
}

// decide answers one request frame; a failure is a response with a code,
// as on the Decisions stream.
func (s *decideServers) decide(body []byte) *pb.DecideResponse {
	kind, deadline, req, err := pb.ParseDecideRequest(body)
	if err != nil {
		return failed(status.Error(codes.InvalidArgument, err.Error()))
	}
	d, what := s.policy.Load(), "Decide"
	if kind == pb.FrameSanitizer {
		d, what = s.sanitizer.Load(), "Sanitize"
	}
	if d == nil {
		return failed(status.Error(codes.Unimplemented, "the plugin does not serve "+what))
	}
	ctx := context.Background()
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	resp, err := d.decide(ctx, req, what)
	if err != nil {
		return failed(err)
	}
	return resp
}
