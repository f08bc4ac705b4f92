package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
)

// Transport is a server's connection through a transport plugin, with its
// config validated. Dial opens one MCP session; after a crash, Dial again
// (the registry does, on next use) and it runs on the restarted plugin.
type Transport struct {
	p      *Plugin
	server string
	config json.RawMessage
}

// Plugin is the plugin the transport runs on.
func (t *Transport) Plugin() *Plugin { return t.p }

// Dial opens a session: the plugin's Open with the server's config, then
// one long-lived stream of frames.
func (t *Transport) Dial(ctx context.Context) (mcp.Conn, error) {
	return t.p.dial(ctx, t.server, t.config)
}

// Transport validates the plugin config of s (a server with Type plugin)
// against the plugin's schema and returns a Transport for it. A config that
// fails the schema is a *ConfigError with the server's source.
func (p *Plugin) Transport(s *config.Server) (*Transport, error) {
	if s.Plugin == nil {
		return nil, fmt.Errorf("server %q has no plugin block", s.Name)
	}
	if !p.Info().Has(pb.KindTransport) {
		return nil, p.kindErr(pb.KindTransport)
	}
	raw, err := configJSON(s.Plugin.Config)
	if err != nil {
		return nil, fmt.Errorf("server %q: plugin config: %v", s.Name, err)
	}
	problems, err := p.validate(pb.KindTransport, raw)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Plugin: p.cfg.Name, Kind: pb.KindTransport, User: "server " + strconv.Quote(s.Name),
			Source: s.Source, Pointer: "/plugin/config", Problems: problems}
	}
	return &Transport{p: p, server: s.Name, config: raw}, nil
}

// Dial opens a transport session with config (JSON; nil means {}), after
// validating it against the plugin's schema. Prefer Transport, whose errors
// carry the config's source.
func (p *Plugin) Dial(ctx context.Context, cfg json.RawMessage) (mcp.Conn, error) {
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	problems, err := p.validate(pb.KindTransport, cfg)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, &ConfigError{Plugin: p.cfg.Name, Kind: pb.KindTransport, User: "the dial", Problems: problems}
	}
	return p.dial(ctx, "", cfg)
}

// OpenError is a transport session the plugin could not open; Msg is the
// plugin's own error text.
type OpenError struct {
	Plugin string
	Server string
	Msg    string
	Stderr []string
}

func (e *OpenError) Error() string {
	s := "plugin " + strconv.Quote(e.Plugin) + " could not open a session"
	if e.Server != "" {
		s += " to server " + strconv.Quote(e.Server)
	}
	s += ": " + e.Msg
	if t := tail(e.Stderr); t != "" {
		s += "; plugin stderr: " + t
	}
	return s
}

func (p *Plugin) dial(ctx context.Context, server string, cfg json.RawMessage) (mcp.Conn, error) {
	inst, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	if inst.transport == nil {
		return nil, p.kindErr(pb.KindTransport)
	}
	resp, err := inst.transport.Open(ctx, &pb.OpenRequest{Config: cfg})
	if err != nil {
		// Only a broken call waits for the exit that would make it a
		// crash; the plugin's own refusal to open is answered at once.
		if code := status.Code(err); (code == codes.Unavailable || code == codes.Canceled || inst.dead()) && inst.exitedWithin(crashWait) {
			return nil, inst.goneError("transport Open")
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &OpenError{Plugin: p.cfg.Name, Server: server, Msg: grpcMessage(err), Stderr: inst.stderr.snapshot()}
	}
	sctx, cancel := context.WithCancel(inst.ctx)
	sctx = metadata.AppendToOutgoingContext(sctx, pb.SessionMetadataKey, resp.Session)
	stream, err := inst.transport.Stream(sctx)
	if err != nil {
		cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		inst.transport.Close(cctx, &pb.CloseRequest{Session: resp.Session})
		ccancel()
		if inst.exitedWithin(500 * time.Millisecond) {
			return nil, inst.goneError("transport stream")
		}
		return nil, &OpenError{Plugin: p.cfg.Name, Server: server, Msg: grpcMessage(err)}
	}
	return &conn{plugin: p.cfg.Name, inst: inst, stream: stream, cancel: cancel, inflight: map[string]struct{}{}, failed: make(chan struct{})}, nil
}

// conn is an mcp.Conn over a plugin's frame stream.
type conn struct {
	plugin string
	inst   *instance
	stream grpc.BidiStreamingClient[pb.Frame, pb.Frame]
	cancel context.CancelFunc
	closed atomic.Bool

	wmu sync.Mutex

	mu       sync.Mutex
	inflight map[string]struct{} // ids of host requests without an answer yet
	pending  [][]byte            // answers made up for them after a crash
	failErr  error
	failed   chan struct{} // closed when failErr is set
}

var _ mcp.Conn = (*conn)(nil)

// MalformedFrameError is a frame from a transport plugin that is not a
// JSON-RPC message.
type MalformedFrameError struct {
	Plugin  string
	Excerpt string
}

func (e *MalformedFrameError) Error() string {
	return "plugin " + strconv.Quote(e.Plugin) + " sent a malformed frame (not one JSON message): " + strconv.Quote(e.Excerpt) + "; the session was closed"
}

// StreamError is a session the plugin ended with an error (its connection
// to the server broke, say). Msg is the plugin's text.
type StreamError struct {
	Plugin string
	Msg    string
	Stderr []string
}

func (e *StreamError) Error() string {
	s := "plugin " + strconv.Quote(e.Plugin) + " ended the session: " + e.Msg
	if t := tail(e.Stderr); t != "" {
		s += "; plugin stderr: " + t
	}
	return s
}

func (c *conn) ReadMessage() ([]byte, error) {
	c.mu.Lock()
	if len(c.pending) > 0 {
		m := c.pending[0]
		c.pending = c.pending[1:]
		c.mu.Unlock()
		return m, nil
	}
	if c.failErr != nil {
		err := c.failErr
		c.mu.Unlock()
		return nil, err
	}
	c.mu.Unlock()

	f, err := c.stream.Recv()
	if err != nil {
		return c.fail(err)
	}
	msg := f.Data
	if len(msg) > pb.MaxFrameSize {
		return c.setFail(&mcp.FrameTooLargeError{Limit: pb.MaxFrameSize})
	}
	if !json.Valid(msg) {
		ex := msg
		if len(ex) > 200 {
			ex = ex[:200]
		}
		c.stream.CloseSend()
		c.cancel()
		return c.setFail(&MalformedFrameError{Plugin: c.plugin, Excerpt: string(ex)})
	}
	if id, hasMethod := requestID(msg); id != nil && !hasMethod {
		c.mu.Lock()
		delete(c.inflight, string(id))
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *conn) setFail(err error) ([]byte, error) {
	c.mu.Lock()
	if c.failErr == nil {
		c.failErr = err
		close(c.failed)
	}
	err = c.failErr
	c.mu.Unlock()
	return nil, err
}

// fail turns the end of the stream into the error a session sees. On a
// crash, every request in flight gets a JSON-RPC error naming the plugin
// and its last stderr lines first, then the session ends with the crash.
func (c *conn) fail(err error) ([]byte, error) {
	if c.closed.Load() {
		return c.setFail(mcp.ErrClosed)
	}
	if errors.Is(err, io.EOF) {
		return c.setFail(io.EOF)
	}
	st, _ := status.FromError(err)
	if st.Code() == codes.ResourceExhausted {
		return c.setFail(&mcp.FrameTooLargeError{Limit: pb.MaxFrameSize})
	}
	if st.Code() == codes.Unavailable || st.Code() == codes.Canceled || c.inst.dead() {
		if c.inst.exitedWithin(time.Second) {
			if c.inst.wasKilled() {
				return c.setFail(mcp.ErrClosed)
			}
			crash := c.inst.crashError("transport stream")
			rpcErr := crash.RPCError()
			c.mu.Lock()
			for id := range c.inflight {
				b, _ := json.Marshal(struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   *mcp.RPCError   `json:"error"`
				}{"2.0", json.RawMessage(id), rpcErr})
				c.pending = append(c.pending, b)
			}
			c.inflight = map[string]struct{}{}
			if c.failErr == nil {
				c.failErr = crash
			}
			c.mu.Unlock()
			return c.ReadMessage()
		}
	}
	return c.setFail(&StreamError{Plugin: c.plugin, Msg: grpcMessage(err), Stderr: c.inst.stderr.snapshot()})
}

// sendFailWait bounds how long a failed write waits for the session's
// reader to learn why the stream ended.
const sendFailWait = 2 * time.Second

func (c *conn) WriteMessage(ctx context.Context, msg []byte) error {
	if c.closed.Load() {
		return mcp.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if id, hasMethod := requestID(msg); id != nil && hasMethod {
		c.mu.Lock()
		c.inflight[string(id)] = struct{}{}
		c.mu.Unlock()
	}
	c.wmu.Lock()
	err := c.stream.Send(&pb.Frame{Data: msg})
	c.wmu.Unlock()
	if err != nil {
		if c.closed.Load() {
			return mcp.ErrClosed
		}
		// The stream is over, and only Recv learns why (gRPC's Send says
		// just EOF): the session's reader records it at once, so the
		// write waits a moment for that reason (a transport plugin's
		// "remote command exited with status 127") rather than answer
		// "EOF".
		select {
		case <-c.failed:
			c.mu.Lock()
			ferr := c.failErr
			c.mu.Unlock()
			if ferr != io.EOF && ferr != mcp.ErrClosed {
				return ferr
			}
		case <-time.After(sendFailWait):
		}
		if c.inst.exitedWithin(time.Second) {
			return c.inst.goneError("transport stream")
		}
		return &StreamError{Plugin: c.plugin, Msg: "the frame stream is closed: " + grpcMessage(err)}
	}
	return nil
}

// Close ends the session: the plugin closes its side of the connection.
func (c *conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.wmu.Lock()
	c.stream.CloseSend()
	c.wmu.Unlock()
	c.cancel()
	return nil
}

// configJSON encodes a config block; nil is {}.
func configJSON(m map[string]any) (json.RawMessage, error) {
	if m == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(m)
}
