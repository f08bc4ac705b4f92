package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// calls records what in-process servers were asked, so a test can prove a
// refused call never left the host.
type calls struct {
	mu   sync.Mutex
	seen []seenCall
}

type seenCall struct {
	Server, Tool string
	Args         json.RawMessage
}

func (c *calls) add(server, tool string, args json.RawMessage) {
	c.mu.Lock()
	c.seen = append(c.seen, seenCall{server, tool, args})
	c.mu.Unlock()
}

// count is how many calls reached server.tool ("" matches any tool).
func (c *calls) count(server, tool string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, s := range c.seen {
		if s.Server == server && (tool == "" || s.Tool == tool) {
			n++
		}
	}
	return n
}

func (c *calls) last() seenCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		return seenCall{}
	}
	return c.seen[len(c.seen)-1]
}

// world is a set of in-process servers a host dials through Options.Dial.
type world struct {
	calls   calls
	mu      sync.Mutex
	servers map[string]*mcp.Server
	dials   map[string]int
	// tap, when set, sees each message a server reads, as it is on the
	// wire.
	tap func([]byte)
}

// tapConn is a server's end of a pipe that shows what it reads to tap.
type tapConn struct {
	mcp.Conn
	tap func([]byte)
}

func (c tapConn) ReadMessage() ([]byte, error) {
	b, err := c.Conn.ReadMessage()
	if err == nil {
		c.tap(b)
	}
	return b, err
}

// tsWorld is a world with the test server as "ts".
func tsWorld() *world {
	w := newWorld()
	w.mu.Lock()
	w.servers["ts"] = testserver.New(testserver.Options{})
	w.mu.Unlock()
	return w
}

func newWorld() *world {
	return &world{servers: map[string]*mcp.Server{}, dials: map[string]int{}}
}

// server adds a server whose tools answer "<server>.<tool>: <args>".
func (w *world) server(name string, tools ...mcp.Tool) *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "srv-" + name, Version: "1"}, mcp.ServerOptions{})
	for _, t := range tools {
		s.AddTool(t, w.handler(name))
	}
	w.mu.Lock()
	w.servers[name] = s
	w.mu.Unlock()
	return s
}

func (w *world) handler(server string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		w.calls.add(server, req.Name, req.Arguments)
		return text(server + "." + req.Name + ": " + string(req.Arguments)), nil
	}
}

func (w *world) dial(ctx context.Context, srv *config.Server) (*mcp.Client, error) {
	w.mu.Lock()
	s := w.servers[srv.Name]
	w.dials[srv.Name]++
	tap := w.tap
	w.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("no in-process server %q", srv.Name)
	}
	a, b := mcp.Pipe()
	if tap != nil {
		b = tapConn{b, tap}
	}
	go s.Serve(context.Background(), b)
	c, err := mcp.Connect(ctx, a, mcp.ClientOptions{Info: mcp.Implementation{Name: "nexus", Version: "test"}})
	if err != nil {
		a.Close()
		return nil, err
	}
	return c, nil
}

// host makes a host over the world's servers. agents is the JSON of the
// "agents" object ("" for none).
func (w *world) host(t testing.TB, agents string, opts engine.Options) *engine.Host {
	t.Helper()
	w.mu.Lock()
	names := make([]string, 0, len(w.servers))
	for n := range w.servers {
		names = append(names, n)
	}
	w.mu.Unlock()
	sort.Strings(names)
	var entries []string
	for _, n := range names {
		entries = append(entries, fmt.Sprintf("%q: {\"command\": \"in-process\"}", n))
	}
	doc := `{"mcpServers": {` + strings.Join(entries, ",") + `}`
	if agents != "" {
		doc += `, "agents": ` + agents
	}
	doc += "}"
	cfg, err := config.Parse([]byte(doc), diag.Source{File: "test.json", Layer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Transport == nil {
		opts.Dial = w.dial
	}
	h := engine.New(cfg, opts)
	t.Cleanup(func() { h.Close() })
	return h
}

// confirmer answers from a script and records what it was asked; with the
// script spent it fails as a missing terminal would.
type confirmer struct {
	mu      sync.Mutex
	answers []policy.Answer
	asked   []policy.ConfirmRequest
}

func (c *confirmer) Confirm(ctx context.Context, r policy.ConfirmRequest) (policy.Answer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, r)
	if len(c.answers) == 0 {
		return policy.No, fmt.Errorf("no terminal")
	}
	a := c.answers[0]
	c.answers = c.answers[1:]
	return a, nil
}

func (c *confirmer) times() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asked)
}

// logBuffer collects a host's log lines.
type logBuffer struct{ testenv.Buffer }

func (b *logBuffer) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: b, Level: hclog.Warn})
}

func toolNames(tools []engine.Tool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	sort.Strings(out)
	return out
}

func wantNames(t *testing.T, tools []engine.Tool, want ...string) {
	t.Helper()
	sort.Strings(want)
	if got := toolNames(tools); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
}

func denied(t *testing.T, err error, link string, parts ...string) {
	t.Helper()
	de, ok := err.(*policy.DeniedError)
	if !ok {
		t.Fatalf("want a *policy.DeniedError from %q, got %T: %v", link, err, err)
	}
	if de.Link != link {
		t.Fatalf("denied by %q, want %q: %v", de.Link, link, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("denial %q lacks %q", err, p)
		}
	}
}

// ok calls a tool and returns the text of its successful result.
func ok(t *testing.T, h *engine.Host, agent, name string, args any) string {
	t.Helper()
	res, err := h.CallTool(ctx, agent, name, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("result %+v", res)
	}
	return res.Content[0].Text
}

// fakeEntry is the mcpServers JSON of a stdio server running this test
// binary in a NEXUS_HOST_FAKE mode.
func fakeEntry(t testing.TB, mode string, env map[string]string, extra string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{"NEXUS_HOST_FAKE": mode}
	for k, v := range env {
		all[k] = v
	}
	envJSON, _ := json.Marshal(all)
	s := fmt.Sprintf(`{"command": %q, "env": %s`, exe, envJSON)
	if extra != "" {
		s += ", " + extra
	}
	return s + "}"
}

var ctx = context.Background()

const yolo = `{"y": {"permission": "yolo"}}`

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
