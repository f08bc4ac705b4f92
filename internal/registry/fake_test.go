package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
)

// fakeNet is a Dialer over in-process servers (mcp.Pipe + mcp.Server). It
// counts dial attempts and concurrency, and can make a server fail to dial,
// hang, fail tools/list or die right after the handshake.
type fakeNet struct {
	mu          sync.Mutex
	servers     map[string]*mcp.Server
	hooks       map[string]func(ctx context.Context) error // run before dialing
	dials       map[string]int
	inflight    int
	maxInflight int
	failList    map[string]bool
	crashInit   map[string]bool       // close the session once it is initialized
	conns       map[string][]mcp.Conn // server ends, to kill sessions
}

func newFakeNet() *fakeNet {
	return &fakeNet{
		servers:   map[string]*mcp.Server{},
		hooks:     map[string]func(context.Context) error{},
		dials:     map[string]int{},
		failList:  map[string]bool{},
		crashInit: map[string]bool{},
		conns:     map[string][]mcp.Conn{},
	}
}

// server registers an in-process server with tools that echo their name.
func (f *fakeNet) server(name string, tools ...string) *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: name, Version: "1"}, mcp.ServerOptions{})
	for _, t := range tools {
		s.AddTool(mcp.Tool{Name: t}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{{Type: mcp.ContentText, Text: name + "." + req.Name}}}, nil
		})
	}
	f.mu.Lock()
	f.servers[name] = s
	f.mu.Unlock()
	return s
}

func (f *fakeNet) set(m map[string]bool, name string, v bool) {
	f.mu.Lock()
	m[name] = v
	f.mu.Unlock()
}

func (f *fakeNet) hook(name string, h func(ctx context.Context) error) {
	f.mu.Lock()
	f.hooks[name] = h
	f.mu.Unlock()
}

func (f *fakeNet) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dials[name]
}

// kill ends every live session of a server from the server's side, as a
// process exiting would.
func (f *fakeNet) kill(name string) {
	f.mu.Lock()
	conns := f.conns[name]
	f.conns[name] = nil
	f.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (f *fakeNet) dial(ctx context.Context, srv *config.Server) (*mcp.Client, error) {
	f.mu.Lock()
	f.dials[srv.Name]++
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	hook, s := f.hooks[srv.Name], f.servers[srv.Name]
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if hook != nil {
		if err := hook(ctx); err != nil {
			return nil, err
		}
	}
	if s == nil {
		return nil, fmt.Errorf("no fake server %q", srv.Name)
	}
	a, b := mcp.Pipe()
	fc := &faultConn{Conn: b, net: f, name: srv.Name}
	f.mu.Lock()
	f.conns[srv.Name] = append(f.conns[srv.Name], b)
	f.mu.Unlock()
	go s.Serve(context.Background(), fc)
	c, err := mcp.Connect(ctx, a, mcp.ClientOptions{Info: mcp.Implementation{Name: "test", Version: "1"}, Timeout: 5 * time.Second})
	if err != nil {
		a.Close()
		return nil, err
	}
	return c, nil
}

// faultConn is the server's end of a pipe that can fail tools/list (it
// answers with an error instead of passing the request on) and die right
// after the handshake.
type faultConn struct {
	mcp.Conn
	net  *fakeNet
	name string
}

func (c *faultConn) ReadMessage() ([]byte, error) {
	for {
		m, err := c.Conn.ReadMessage()
		if err != nil {
			return nil, err
		}
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(m, &env)
		c.net.mu.Lock()
		failList, crash := c.net.failList[c.name], c.net.crashInit[c.name]
		c.net.mu.Unlock()
		switch {
		case env.Method == mcp.MethodToolsList && failList:
			resp := `{"jsonrpc":"2.0","id":` + string(env.ID) + `,"error":{"code":-32603,"message":"tools are on fire"}}`
			if err := c.Conn.WriteMessage(context.Background(), []byte(resp)); err != nil {
				return nil, err
			}
			continue
		case env.Method == "notifications/initialized" && crash:
			c.Conn.Close()
			return nil, errors.New("crashed")
		}
		return m, nil
	}
}

// clock is a fake time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func srv(name string) *config.Server {
	return &config.Server{Name: name, Type: config.TypeStdio, Command: []string{name}, Enabled: true}
}

// newReg makes a registry over f that is closed when the test ends.
func newReg(t *testing.T, f *fakeNet, opts Options, servers ...*config.Server) *Registry {
	t.Helper()
	r := New(f.dial, opts)
	r.Add(servers...)
	t.Cleanup(r.Close)
	return r
}

func statusOf(r *Registry, name string) Status {
	for _, s := range r.Status() {
		if s.Config.Name == name {
			return s
		}
	}
	return Status{}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
