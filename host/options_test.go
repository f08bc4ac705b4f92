package host

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/telemetry"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// TestOptionsCarried: New hands the engine every option, each field set
// reaching the engine's field of the same name, and Options has a field
// for each of the engine's, so an option added there and not here (or
// here and not carried) fails.
func TestOptionsCarried(t *testing.T) {
	var o Options
	fill(t, reflect.ValueOf(&o).Elem())
	o.Lock = wrapLock(&lock.Lock{}) // opaque: an empty Lock{} is no lockfile
	o.Audit = &AuditLog{&audit.Writer{}}
	o.Telemetry = &Telemetry{&telemetry.Telemetry{}}
	e := reflect.ValueOf(o.engine())
	h := reflect.TypeOf(o)
	for i := range e.NumField() {
		name := e.Type().Field(i).Name
		if _, ok := h.FieldByName(name); !ok {
			t.Errorf("engine.Options.%s has no host.Options field", name)
			continue
		}
		if e.Field(i).IsZero() {
			t.Errorf("Options.%s is set but does not reach the engine", name)
		}
	}
	if h.NumField() != e.NumField() {
		t.Errorf("host.Options has %d fields, the engine's %d", h.NumField(), e.NumField())
	}
	// What the engine calls, the embedder's function gets.
	var got ToolDecision
	o.OnToolDecision = func(d ToolDecision) { got = d }
	o.engine().OnToolDecision(engine.ToolDecision{Agent: "bot", Tool: "add", Withheld: true})
	if got.Agent != "bot" || got.Tool != "add" || !got.Withheld {
		t.Errorf("OnToolDecision got %+v", got)
	}
}

type askNo struct{}

func (askNo) Confirm(context.Context, ConfirmRequest) (Answer, error) { return AnswerNo, nil }

type promptNo struct{}

func (promptNo) Prompt(ConfigInput) (string, error) { return "", nil }

// TestConfigOptionsCarried: LoadConfig hands the loader every option, as
// TestOptionsCarried checks New's.
func TestConfigOptionsCarried(t *testing.T) {
	var o ConfigOptions
	fill(t, reflect.ValueOf(&o).Elem())
	c := reflect.ValueOf(o.config())
	h := reflect.TypeOf(o)
	for i := range c.NumField() {
		name := c.Type().Field(i).Name
		if _, ok := h.FieldByName(name); !ok {
			t.Errorf("config.Options.%s has no ConfigOptions field", name)
		} else if c.Field(i).IsZero() {
			t.Errorf("ConfigOptions.%s is set but does not reach the loader", name)
		}
	}
	if h.NumField() != c.NumField() {
		t.Errorf("ConfigOptions has %d fields, the loader's %d", h.NumField(), c.NumField())
	}
}

type approvals struct{}

func (approvals) Approved(string, string, string) bool { return false }
func (approvals) Approve(string, string, string) error { return nil }

// fill sets every field of v to a value that is not zero.
func fill(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i))
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int64:
		v.SetInt(1)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
	case reflect.Func:
		v.Set(reflect.MakeFunc(v.Type(), func([]reflect.Value) []reflect.Value { return nil }))
	case reflect.Interface:
		for _, x := range []any{hclog.NewNullLogger(), askNo{}, approvals{}, promptNo{}, os.Stderr} {
			if reflect.TypeOf(x).Implements(v.Type()) {
				v.Set(reflect.ValueOf(x))
				return
			}
		}
		t.Fatalf("fill: no value for %s", v.Type())
	default:
		t.Fatalf("fill: no value for %s", v.Type())
	}
}

// TestServerCarried: a Dialer and a Transport get the server the engine
// dials as host's Server, every field set from the config's, and copies:
// what they change never reaches the config.
func TestServerCarried(t *testing.T) {
	cs := &config.Server{Name: "gh", Type: config.TypePlugin, Command: []string{"gh-mcp", "-v"}, URL: "http://127.0.0.1:1/mcp",
		Stdio:   stdio.Options{Env: map[string]string{"K": "v"}, FileEnv: map[string]string{"F": "f", "K": "file"}, Cwd: "/w"},
		Plugin:  &config.PluginTransport{Name: "transport-ssh"},
		Enabled: true, Timeout: time.Second, Source: diag.Source{File: "nexus.hcl", Line: 3}}
	var dialed, opened *Server
	o := Options{
		Dial:      func(_ context.Context, s *Server) (*mcp.Client, error) { dialed = s; return nil, nil },
		Transport: func(_ context.Context, s *Server) (mcp.Conn, error) { opened = s; return nil, nil },
	}
	e := o.engine()
	e.Dial(t.Context(), cs)
	e.Transport(t.Context(), cs)
	for _, s := range []*Server{dialed, opened} {
		if s == nil {
			t.Fatal("the embedder's function was not called")
		}
		v := reflect.ValueOf(*s)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("Server.%s is not set from the config", v.Type().Field(i).Name)
			}
		}
		if s.Plugin != "transport-ssh" || s.Env["K"] != "v" || s.Env["F"] != "f" || s.Cwd != "/w" || s.Source.Line != 3 {
			t.Errorf("server %+v", s)
		}
		s.Command[0], s.Env["K"] = "evil", "x"
	}
	if cs.Command[0] != "gh-mcp" || cs.Stdio.Env["K"] != "v" {
		t.Errorf("a Dialer's change reached the config: %v %v", cs.Command, cs.Stdio.Env)
	}
}
