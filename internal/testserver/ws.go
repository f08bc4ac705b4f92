package testserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The test server over WebSocket: MCP's JSON-RPC messages, one per text
// frame, on connections that negotiate the subprotocol "mcp". Each
// connection is one session. It is what the transport-websocket plugin is
// tested against end to end (`nexus testserver --ws ADDR`).

// WSSubprotocol is the WebSocket subprotocol MCP sessions negotiate.
const WSSubprotocol = "mcp"

// WSHandler serves one MCP session per WebSocket connection. A client that
// does not offer the "mcp" subprotocol is refused with close code 1002
// (protocol error) and a reason that says so.
func WSHandler(o Options) http.Handler {
	srv := New(o)
	log := o.Logger
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{WSSubprotocol}})
		if err != nil {
			return // Accept has answered the request
		}
		if c.Subprotocol() != WSSubprotocol {
			c.Close(websocket.StatusProtocolError, `the client must offer the WebSocket subprotocol "mcp"`)
			return
		}
		c.SetReadLimit(mcp.MaxFrameSize)
		conn := NewWSConn(c)
		if err := srv.Serve(r.Context(), conn); err != nil && log != nil && !errors.Is(err, mcp.ErrClosed) {
			log.Debug("websocket session ended", "remote", r.RemoteAddr, "error", err)
		}
		conn.Close()
	})
}

// ServeWS listens on addr (host:port; use a loopback address) and serves
// WSHandler at every path until ctx ends.
func ServeWS(ctx context.Context, o Options, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ServeWSListener(ctx, o, ln)
}

// ServeWSListener is ServeWS on a listener the caller opened (tests listen
// on 127.0.0.1:0 and read the port back).
func ServeWSListener(ctx context.Context, o Options, ln net.Listener) error {
	if o.Logger != nil {
		o.Logger.Info("test server listening", "url", "ws://"+ln.Addr().String()+"/")
	}
	hs := &http.Server{Handler: WSHandler(o), ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
		hs.Close()
	})
	defer stop()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return ctx.Err()
	}
	return err
}

// WSConn is an mcp.Conn over a WebSocket connection: one JSON-RPC message
// per text frame. Binary frames end the session with an error.
type WSConn struct {
	c      *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
}

var _ mcp.Conn = (*WSConn)(nil)

// NewWSConn wraps c; the caller has set its read limit.
func NewWSConn(c *websocket.Conn) *WSConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &WSConn{c: c, ctx: ctx, cancel: cancel}
}

// ErrWSBinaryFrame is a binary frame where MCP sends only text.
var ErrWSBinaryFrame = errors.New("websocket: got a binary frame; MCP messages travel as text frames")

func (w *WSConn) ReadMessage() ([]byte, error) {
	typ, b, err := w.c.Read(w.ctx)
	if err != nil {
		if w.ctx.Err() != nil {
			return nil, mcp.ErrClosed
		}
		if s := websocket.CloseStatus(err); s == websocket.StatusNormalClosure || s == websocket.StatusGoingAway {
			return nil, io.EOF
		}
		if errors.Is(err, websocket.ErrMessageTooBig) {
			return nil, &mcp.FrameTooLargeError{Limit: mcp.MaxFrameSize}
		}
		return nil, err
	}
	if typ != websocket.MessageText {
		return nil, ErrWSBinaryFrame
	}
	return b, nil
}

func (w *WSConn) WriteMessage(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageText, msg)
}

// Close sends a normal closure and releases the connection.
func (w *WSConn) Close() error {
	w.once.Do(func() {
		w.cancel()
		w.c.Close(websocket.StatusNormalClosure, "")
	})
	return nil
}
