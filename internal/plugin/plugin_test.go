package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

func toolEvent(tool string) *event.Event {
	return &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
		Agent:  event.Agent{ID: "cli", Permission: event.Trusted},
		Server: event.Server{Name: "github"}, Tool: &event.Tool{Name: tool},
		Params: json.RawMessage(`{"name":"` + tool + `","arguments":{}}`)}
}

// guardFilters opens the test plugin as "guard" on m with two filters: a
// policy denying delete_repo and a sanitizer redacting "secret".
func guardFilters(t *testing.T, m *Manager) (pol, san *Link) {
	t.Helper()
	ctx := ctxT(t)
	cfg := &config.Config{Plugins: []*config.Plugin{pinned(t, "guard", testPlugin(t, "good"))}}
	pol, err := m.Filter(ctx, cfg, &config.Filter{Name: "no-delete", Kind: "policy", Plugin: "guard",
		Config: map[string]any{"deny_tools": []any{"delete_repo"}}})
	if err != nil {
		t.Fatal(err)
	}
	san, err = m.Filter(ctx, cfg, &config.Filter{Name: "redact", Kind: "sanitizer", Plugin: "guard"})
	if err != nil {
		t.Fatal(err)
	}
	return pol, san
}

func TestPolicyAndSanitizer(t *testing.T) {
	m, logs := newManager(t, Options{})
	ctx := ctxT(t)
	pol, san := guardFilters(t, m)
	chain := policy.NewChain(policy.Entry{Link: pol, Kind: policy.KindPolicy}, policy.Entry{Link: san, Kind: policy.KindSanitizer})

	if _, err := chain.Request(ctx, toolEvent("list_repos")); err != nil {
		t.Fatalf("list_repos: %v", err)
	}
	_, err := chain.Request(ctx, toolEvent("delete_repo"))
	var de *policy.DeniedError
	if !errors.As(err, &de) || !strings.Contains(de.Reason, "delete_repo is not allowed") {
		t.Fatalf("delete_repo: got %v, want a denial with the plugin's reason", err)
	}
	e := toolEvent("read")
	e.Result = json.RawMessage(`{"content":[{"type":"text","text":"the secret is 42"}]}`)
	res, err := chain.Response(ctx, e)
	if err != nil || !strings.Contains(string(res), "[redacted]") {
		t.Fatalf("sanitizer: %s, %v", res, err)
	}
	// The plugin's hclog line reaches the host logger, tagged with its name.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "denied") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "denied") {
			line = l
		}
	}
	if !strings.Contains(line, "nexus.plugin.guard") || !strings.Contains(line, "tool=delete_repo") {
		t.Errorf("plugin log line not re-emitted with the plugin's name: %q\nall logs:\n%s", line, logs)
	}
	info := m.plugins["guard"].Info()
	if strings.Join(info.Kinds, ",") != "transport,policy,sanitizer" || info.ProtocolVersion != 1 || info.Name != "testplugin" {
		t.Errorf("info = %+v", info)
	}
}

func TestTransportEndToEnd(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	pc := pinned(t, "pipe", testPlugin(t, "good"))
	cfg := &config.Config{Plugins: []*config.Plugin{pc}}
	srv := &config.Server{Name: "ts", Type: config.TypePlugin, Plugin: &config.PluginTransport{Name: "pipe"}}
	tr, err := m.Transport(ctx, cfg, srv)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tr.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.ServerInfo().Name != "nexus-testserver" {
		t.Errorf("server info %+v", c.ServerInfo())
	}
	res, err := c.CallTool(ctx, "echo", map[string]any{"message": "through a plugin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "through a plugin") {
		t.Fatalf("echo result %+v", res)
	}
	// Many sessions over one plugin process, concurrently.
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			conn, err := tr.Dial(ctx)
			if err != nil {
				errs <- err
				return
			}
			c, err := mcp.Connect(ctx, conn, mcp.ClientOptions{})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_, err = c.CallTool(ctx, "add", map[string]any{"a": 1, "b": 2}, nil)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestConfigFailsSchema(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	pc := pinned(t, "pipe", testPlugin(t, "good"))
	cfg := &config.Config{Plugins: []*config.Plugin{pc}}
	srv := &config.Server{Name: "remote", Type: config.TypePlugin,
		Plugin: &config.PluginTransport{Name: "pipe", Config: map[string]any{"command": "not-a-list", "colour": "blue"}},
		Source: diag.Source{File: "/work/nexus.hcl", Layer: "project", Line: 12}}
	_, err := m.Transport(ctx, cfg, srv)
	err = Explain(err)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a ConfigError", err)
	}
	msg := err.Error()
	for _, want := range []string{"Plugin Config Invalid", "/work/nexus.hcl (project config), line 12", "/command", "colour", `server "remote"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("report lacks %q:\n%s", want, msg)
		}
	}
	_, err = m.Filter(ctx, cfg, &config.Filter{Name: "f", Kind: "policy", Plugin: "pipe", Config: map[string]any{"deny_tools": "x"},
		Source: diag.Source{File: "/work/nexus.hcl", Line: 30}})
	err = Explain(err)
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "line 30") || !strings.Contains(err.Error(), "/deny_tools") {
		t.Fatalf("filter config: %v", err)
	}
}

func TestRequestID(t *testing.T) {
	cases := []struct {
		in     string
		id     string
		method bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":99,"x":"}"}}`, "7", true},
		{` { "method" : "x" , "params" : [1,{"id":3}] , "id" : "a\"b" } `, `"a\"b"`, true},
		{`{"jsonrpc":"2.0","id":12,"result":{}}`, "12", false},
		{`{"jsonrpc":"2.0","method":"notifications/progress"}`, "", true},
		{`[1,2]`, "", false},
		{`{"id":`, "", false},
		{``, "", false},
	}
	for _, c := range cases {
		id, m := requestID([]byte(c.in))
		if string(id) != c.id || m != c.method {
			t.Errorf("requestID(%s) = %q, %v; want %q, %v", c.in, id, m, c.id, c.method)
		}
	}
	msg := []byte(cases[0].in)
	if n := testing.AllocsPerRun(100, func() { requestID(msg) }); n != 0 {
		t.Errorf("requestID allocates %v times per message", n)
	}
}

func FuzzRequestID(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"id":99}}`))
	f.Add([]byte(`{"id":"\\\"","result":[{"a":"]"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, _ := requestID(b)
		if len(id) > len(b) {
			t.Fatal("id longer than input")
		}
		if json.Valid(b) && id != nil && !json.Valid(id) {
			t.Fatalf("id %q of valid input %q is not JSON", id, b)
		}
	})
}

func FuzzRenderLogLine(f *testing.F) {
	f.Add([]byte(`{"@level":"error","@message":"boom","@timestamp":"x","k":1}`))
	f.Add([]byte("panic: \xff\xfe runtime error"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := renderLogLine(b)
		if len(s) > 3*maxKeptLine {
			t.Fatalf("kept %d bytes", len(s))
		}
		var r lineRing
		r.Write(b)
		r.Write([]byte("\n"))
		if n := len(r.snapshot()); n > keptLines {
			t.Fatalf("%d lines", n)
		}
	})
}

// A policy or sanitizer plugin built for a newer event ABI than the
// host's is refused at load, saying which; a transport, which reads no
// events, and a plugin that does not say (0) are not.
func TestEventABI(t *testing.T) {
	newer := int32(event.ABI + 1)
	for _, c := range []struct {
		kinds []string
		abi   int32
		ok    bool
	}{
		{[]string{pb.KindPolicy}, newer, false},
		{[]string{pb.KindTransport, pb.KindSanitizer}, newer, false},
		{[]string{pb.KindTransport}, newer, true},
		{[]string{pb.KindPolicy}, event.ABI, true},
		{[]string{pb.KindPolicy}, 0, true},
		{[]string{pb.KindTransport}, -1, false},
	} {
		_, err := infoFrom(launchSpec{name: "p"}, 1, &pb.InfoResponse{Kinds: c.kinds, EventAbi: c.abi})
		if c.ok != (err == nil) {
			t.Errorf("kinds %v, event ABI %d: %v", c.kinds, c.abi, err)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("expects event ABI %d, and this host speaks event ABI %d", c.abi, event.ABI)) {
			t.Errorf("kinds %v, event ABI %d: the error does not say which: %v", c.kinds, c.abi, err)
		}
	}
}
