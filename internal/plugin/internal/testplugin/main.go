package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/internal/testserver"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

// fd2 is the process's real stderr: after the handshake go-plugin points
// os.Stderr at a pipe it forwards over gRPC.
var fd2 = os.NewFile(2, "stderr")

func main() {
	mode := filepath.Base(os.Args[0])
	mode = strings.TrimSuffix(mode, ".exe")
	switch mode {
	case "crash-at-start":
		fmt.Fprintln(os.Stderr, "fatal: cannot read /etc/testplugin.conf: no such file")
		os.Exit(3)
	case "hang":
		time.Sleep(time.Hour)
	case "garbage":
		fmt.Println("hello, I am not a handshake")
	case "badversion":
		serveVersion(99)
		return
	case "othercookie":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "OTHER_HOST_PLUGIN", MagicCookieValue: "x"},
			Plugins:         goplugin.PluginSet{},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
		return
	case "counted":
		// Records each launch beside the binary, for tests that count them.
		if f, err := os.OpenFile(filepath.Join(filepath.Dir(os.Args[0]), "counted.launches"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintln(f, os.Getpid())
			f.Close()
		}
	case "spawner":
		// Starts a child of its own, as a plugin wrapping a tool might,
		// and records its PID beside the binary.
		child := exec.Command("sleep", "300")
		if err := child.Start(); err == nil {
			if f, err := os.OpenFile(filepath.Join(filepath.Dir(os.Args[0]), "spawner.children"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintln(f, child.Process.Pid)
				f.Close()
			}
		}
	case "envdump":
		plugin.Serve(plugin.Options{Policy: plugin.DecideFunc(func(ctx context.Context, e *event.Event) (event.Decision, error) {
			b, _ := json.Marshal(map[string]any{"env": os.Environ(), "stdin": stdinState()})
			return plugin.Deny(string(b)), nil
		})})
		return
	}
	plugin.Serve(plugin.Options{Name: "testplugin", Version: "0.0.1", Transport: transport{}, Policy: policyKind{}, Sanitizer: sanitizerKind{}})
}

// stdinState reports whether stdin is empty (the host's /dev/null).
func stdinState() string {
	done := make(chan string, 1)
	go func() {
		b := make([]byte, 1)
		n, err := os.Stdin.Read(b)
		done <- fmt.Sprintf("read %d bytes, err=%v", n, err)
	}()
	select {
	case s := <-done:
		return s
	case <-time.After(200 * time.Millisecond):
		return "blocked"
	}
}

// serveVersion serves a Nexus-cookie plugin that speaks only version v.
func serveVersion(v int) {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  pluginwire.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{v: {pluginwire.SetName: &nothing{}}},
		GRPCServer:       goplugin.DefaultGRPCServer,
	})
}

type nothing struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (*nothing) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error { return nil }
func (*nothing) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}

// ---- transport

type transportConfig struct {
	Command    []string `json:"command"`     // run a stdio server; default: the test server in-process
	CrashAfter int      `json:"crash_after"` // exit after this many frames from the host
	Malformed  bool     `json:"malformed"`   // answer the first frame with garbage
	Huge       bool     `json:"huge"`        // answer the first frame with an oversized frame
	FailOpen   string   `json:"fail_open"`   // Open fails with this text
}

type transport struct{}

func (transport) ConfigSchema() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {
		"command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
		"crash_after": {"type": "integer", "minimum": 1},
		"malformed": {"type": "boolean"}, "huge": {"type": "boolean"},
		"fail_open": {"type": "string"}}, "additionalProperties": false}`)
}

func (transport) Open(ctx context.Context, raw json.RawMessage) (plugin.Conn, error) {
	var c transportConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c.FailOpen != "" {
		fmt.Fprintln(os.Stderr, "dial tcp 127.0.0.1:1: connect: connection refused")
		return nil, fmt.Errorf("%s", c.FailOpen)
	}
	var inner plugin.Conn
	if len(c.Command) > 0 {
		cmd := exec.Command(c.Command[0], c.Command[1:]...)
		cmd.Stderr = os.Stderr
		w, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		r, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		inner = &procConn{StreamConn: mcp.NewStreamConn(r, w, 0), cmd: cmd, w: w}
	} else {
		a, b := mcp.Pipe()
		go testserver.New(testserver.Options{}).Serve(context.Background(), b)
		inner = a
	}
	return &testConn{Conn: inner, cfg: c}, nil
}

type procConn struct {
	*mcp.StreamConn
	cmd *exec.Cmd
	w   io.Closer
}

func (p *procConn) Close() error {
	p.w.Close()
	p.StreamConn.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait()
	return nil
}

type testConn struct {
	plugin.Conn
	cfg    transportConfig
	frames atomic.Int64
}

func (t *testConn) WriteMessage(ctx context.Context, msg []byte) error {
	n := t.frames.Add(1)
	if t.cfg.CrashAfter > 0 && n > int64(t.cfg.CrashAfter) {
		fmt.Fprintln(fd2, "panic: runtime error: index out of range [3] with length 3 (transport)")
		os.Exit(2)
	}
	return t.Conn.WriteMessage(ctx, msg)
}

func (t *testConn) ReadMessage() ([]byte, error) {
	msg, err := t.Conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	switch {
	case t.cfg.Malformed:
		return []byte("<html>502 Bad Gateway</html>"), nil
	case t.cfg.Huge:
		return []byte(`"` + strings.Repeat("x", pluginwire.MaxFrameSize+10) + `"`), nil
	}
	return msg, nil
}

// ---- policy and sanitizer

type policyConfig struct {
	DenyTools []string `json:"deny_tools"`
	CrashOn   string   `json:"crash_on"`
	HangOn    string   `json:"hang_on"`
	StuckOn   string   `json:"stuck_on"` // ignores its context, as a wedged plugin would
	FailOn    string   `json:"fail_on"`
	PanicOn   string   `json:"panic_on"`
	Stdout    bool     `json:"stdout"` // print to stdout on every call
}

type policyKind struct{}

func (policyKind) ConfigSchema() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {
		"deny_tools": {"type": "array", "items": {"type": "string"}},
		"crash_on": {"type": "string"}, "hang_on": {"type": "string"}, "stuck_on": {"type": "string"},
		"fail_on": {"type": "string"}, "panic_on": {"type": "string"},
		"stdout": {"type": "boolean"}}, "additionalProperties": false}`)
}

func (policyKind) NewPolicy(_ context.Context, raw json.RawMessage) (plugin.Decider, error) {
	var c policyConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &decider{c: c}, nil
}

type decider struct{ c policyConfig }

func (d *decider) Decide(ctx context.Context, e *event.Event) (event.Decision, error) {
	tool := ""
	if e.Tool != nil {
		tool = e.Tool.Name
	}
	if d.c.Stdout {
		fmt.Println("garbage on stdout after the handshake")
	}
	switch tool {
	case "":
	case d.c.CrashOn:
		// Straight to fd 2, as the Go runtime writes a panic.
		fmt.Fprintln(fd2, "panic: boom in Decide")
		fmt.Fprintln(fd2, "goroutine 7 [running]:")
		os.Exit(2)
	case d.c.HangOn:
		<-ctx.Done()
		return event.Decision{}, ctx.Err()
	case d.c.StuckOn:
		time.Sleep(time.Hour)
	case d.c.FailOn:
		return event.Decision{}, fmt.Errorf("authorization service unreachable")
	case d.c.PanicOn:
		panic("nil map write")
	}
	for _, t := range d.c.DenyTools {
		if t == tool {
			plugin.Logger().Info("denied", "tool", tool)
			return plugin.Deny("tool " + tool + " is not allowed here"), nil
		}
	}
	return plugin.Allow(), nil
}

type sanitizerKind struct{}

func (sanitizerKind) NewSanitizer(context.Context, json.RawMessage) (plugin.Decider, error) {
	return plugin.DecideFunc(func(ctx context.Context, e *event.Event) (event.Decision, error) {
		s := string(e.Result)
		if !strings.Contains(s, "secret") {
			return plugin.Allow(), nil
		}
		return plugin.ModifyResult(json.RawMessage(strings.ReplaceAll(s, "secret", "[redacted]")), "redacted"), nil
	}), nil
}
