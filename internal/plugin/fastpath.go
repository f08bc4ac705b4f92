package plugin

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
)

// fastPath is the host's side of the Decide fast path (the protocol, and
// why, are in internal/pluginwire's fastpath.go): a private directory whose
// socket the plugin listens on, and a pool of connections, each carrying
// one call at a time on the calling goroutine, with no goroutine of its
// own. A plugin that does not listen (built with an older SDK) turns it
// off for good on the first call; the call goes over gRPC.
type fastPath struct {
	dir, sock string
	token     [pb.DecideTokenSize]byte

	mu     sync.Mutex
	idle   []*fastConn
	open   int  // connections in total, idle or in a call
	off    bool // the plugin does not serve it
	closed bool
}

type fastConn struct {
	c   net.Conn
	r   *bufio.Reader
	buf []byte
}

const (
	// maxFastConns bounds the connections to one plugin; calls beyond
	// them go over gRPC.
	maxFastConns = 64
	// fastDialWait bounds connecting to the plugin's socket (a local
	// socket connects at once or not at all).
	fastDialWait = time.Second
	// fastGrace is how long the plugin's deadline trails the call's.
	fastGrace = time.Second
)

// errNoFastPath: this call goes over gRPC.
var errNoFastPath = errors.New("plugin: no Decide fast path")

// newFastPath makes the directory and token, or returns nil where the
// fast path is not offered (Windows, or no private directory).
func newFastPath() *fastPath {
	if runtime.GOOS == "windows" {
		return nil
	}
	dir, err := os.MkdirTemp("", "nexus-plugin-")
	if err != nil {
		return nil
	}
	f := &fastPath{dir: dir, sock: filepath.Join(dir, "decide.sock")}
	if _, err := rand.Read(f.token[:]); err != nil {
		os.RemoveAll(dir)
		return nil
	}
	return f
}

// env is what the plugin's environment gets.
func (f *fastPath) env() []string {
	return []string{pb.DecideSocketEnv + "=" + f.sock, pb.DecideTokenEnv + "=" + hex.EncodeToString(f.token[:])}
}

// call sends req on an idle connection (or a new one) and waits for the
// answer on the calling goroutine. ctx ending closes the connection under
// the call. errNoFastPath means the call should go over gRPC; any other
// error is the call's, as a *fastError or a response's code.
func (f *fastPath) call(ctx context.Context, kind byte, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	c, err := f.get()
	if err != nil {
		return nil, err
	}
	// The plugin's own deadline trails the call's, so the host's timer,
	// not the plugin's answer to its own, is what ends a call that runs
	// out of time; the plugin still stops work for a host that is gone.
	deadline, ok := ctx.Deadline()
	if ok {
		deadline = deadline.Add(fastGrace)
	}
	c.buf, err = pb.AppendDecideRequest(c.buf[:0], kind, deadline, req)
	if err != nil {
		f.put(c)
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { c.c.SetDeadline(time.Unix(1, 0)) })
	resp, err := c.roundTrip()
	if !stop() || err != nil {
		// ctx ended, or the connection broke: it may hold half a call.
		f.drop(c)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &fastError{err: err}
	}
	f.put(c)
	return answered(resp)
}

func (c *fastConn) roundTrip() (*pb.DecideResponse, error) {
	if _, err := c.c.Write(c.buf); err != nil {
		return nil, err
	}
	body, err := pb.ReadFrame(c.r, c.buf, pb.MaxGRPCMessage)
	if err != nil {
		return nil, err
	}
	if c.buf = body; cap(c.buf) > 64<<10 {
		c.buf = nil
	}
	return pb.ParseDecideResponse(body)
}

// get takes an idle connection or opens one.
func (f *fastPath) get() (*fastConn, error) {
	f.mu.Lock()
	if f.off || f.closed {
		f.mu.Unlock()
		return nil, errNoFastPath
	}
	if n := len(f.idle); n > 0 {
		c := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return c, nil
	}
	if f.open >= maxFastConns {
		f.mu.Unlock()
		return nil, errNoFastPath
	}
	f.open++
	f.mu.Unlock()
	c, err := net.DialTimeout("unix", f.sock, fastDialWait)
	if err == nil {
		c.SetWriteDeadline(time.Now().Add(fastDialWait))
		_, err = c.Write(f.token[:])
		c.SetWriteDeadline(time.Time{})
		if err != nil {
			c.Close()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.open--
		if f.open == 0 && len(f.idle) == 0 {
			// Nothing ever connected: the plugin does not listen.
			f.off = true
		}
		return nil, errNoFastPath
	}
	return &fastConn{c: c, r: bufio.NewReaderSize(c, 4<<10)}, nil
}

func (f *fastPath) put(c *fastConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		f.open--
		c.c.Close()
		return
	}
	f.idle = append(f.idle, c)
}

func (f *fastPath) drop(c *fastConn) {
	c.c.Close()
	f.mu.Lock()
	f.open--
	f.mu.Unlock()
}

// close ends every idle connection and removes the directory; a call in
// flight closes its own when it returns.
func (f *fastPath) close() {
	f.mu.Lock()
	f.closed = true
	idle := f.idle
	f.idle, f.open = nil, f.open-len(idle)
	f.mu.Unlock()
	for _, c := range idle {
		c.c.Close()
	}
	os.RemoveAll(f.dir)
}

// fastError is a fast-path connection that broke during a call: as a
// gRPC Unavailable, most likely the plugin's exit.
type fastError struct{ err error }

func (e *fastError) Error() string {
	return fmt.Sprintf("the connection to the plugin broke during the call: %v", e.err)
}

func (e *fastError) Unwrap() error { return e.err }
