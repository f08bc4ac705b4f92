package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// misbehave is internal/wasm's test filter: its config's first letter
// picks how it fails ("E": it reports an error, "C": it refuses its
// config).
const misbehave = "../internal/wasm/testdata/misbehave.wasm"

// TestFacadeErrors: each exported function made to fail returns host's
// error types, never an internal one alone, so an embedder's errors.As
// finds what it branches on. A new exported function belongs here, with
// an input that makes it fail.
func TestFacadeErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := write(t, dir, "garbage", "{ not what any file here holds")
	missing := filepath.Join(dir, "missing")
	ctx := context.Background()
	as := func(target any) func(error) bool {
		return func(err error) bool { return errors.As(err, target) }
	}

	for _, c := range []struct {
		name string
		call func(t *testing.T) error
		want func(error) bool // nil: any error, as long as no internal type is alone
	}{
		{"LoadConfig", func(t *testing.T) error {
			_, err := host.LoadConfig(host.ConfigOptions{Files: []string{missing}, Dir: dir, Home: dir})
			return err
		}, as(new(*host.Report))},
		{"ParseConfig", func(t *testing.T) error {
			_, err := host.ParseConfig([]byte(`{"mcpServers": 1}`), "bad.json")
			return err
		}, as(new(*host.Report))},
		{"ConfigErrors", func(t *testing.T) error {
			return host.ConfigErrors([]*host.Report{{Title: "Config Error", Problem: "a"}, {Title: "Config Error", Problem: "b"}})
		}, func(err error) bool { return len(host.Reports(err)) == 2 && as(new(*host.Report))(err) }},
		{"Config.Compile", func(t *testing.T) error {
			_, _, err := config(t, "").Compile("no-such-format", false)
			return err
		}, nil},
		{"ReadLockFile", func(t *testing.T) error {
			_, err := host.ReadLockFile(garbage)
			return err
		}, nil},
		{"OpenApprovals", func(t *testing.T) error {
			_, err := host.OpenApprovals(garbage, config(t, ""))
			return err
		}, nil},
		{"ReadApprovals", func(t *testing.T) error {
			_, err := host.ReadApprovals(garbage)
			return err
		}, nil},
		{"WriteApprovals", func(t *testing.T) error {
			return host.WriteApprovals(filepath.Join(garbage, "approvals.json"), nil) // under a file
		}, nil},
		{"HashConfig", func(t *testing.T) error {
			_, _, err := host.HashConfig(missing)
			return err
		}, nil},
		{"OpenFilter missing", func(t *testing.T) error {
			_, err := host.OpenFilter(ctx, host.FilterSpec{Path: missing})
			return err
		}, as(new(*host.FilterLoadError))},
		{"OpenFilter refused config", func(t *testing.T) error {
			_, err := host.OpenFilter(ctx, host.FilterSpec{Path: misbehave, Config: json.RawMessage(`"C"`)})
			return err
		}, as(new(*host.FilterLoadError))},
		{"WASMFilter.Call", func(t *testing.T) error {
			f, err := host.OpenFilter(ctx, host.FilterSpec{Path: misbehave, Config: json.RawMessage(`"E"`)})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close(ctx)
			_, err = f.Call(ctx, &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
				Server: event.Server{Name: "ts"}, Tool: &event.Tool{Name: "echo"}, Params: json.RawMessage(`{"name":"echo","arguments":{}}`)})
			return err
		}, func(err error) bool {
			var e *host.FilterCallError
			return errors.As(err, &e) && e.Filter == "misbehave" && e.Tool == "echo" && strings.Contains(e.Err.Error(), "database unreachable")
		}},
		{"InspectFilter", func(t *testing.T) error {
			_, err := host.InspectFilter(ctx, garbage, "")
			return err
		}, as(new(*host.FilterLoadError))},
		{"InspectPlugin", func(t *testing.T) error {
			_, err := host.InspectPlugin(ctx, missing, host.InspectOptions{})
			return err
		}, func(err error) bool {
			var e *host.PluginLoadError
			return errors.As(err, &e) && e.Kind == "not found" && e.Path == missing
		}},
		{"OpenTelemetry", func(t *testing.T) error {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
			_, err := host.OpenTelemetry(config(t, ""), false)
			return err
		}, nil},
		{"SamplingModel.Create", func(t *testing.T) error {
			m := host.NewSamplingModel(config(t, `sampling {
  url     = "http://127.0.0.1:9/v1"
  model   = "m"
  servers = ["ts"]
}`))
			_, err := m.Create(ctx, "other", &mcp.CreateMessageParams{})
			return err
		}, func(err error) bool {
			var e *host.SamplingError
			return errors.As(err, &e) && e.Server == "other"
		}},
		{"VerifyAudit", func(t *testing.T) error {
			_, err := host.VerifyAudit(host.VerifyAuditOptions{}, garbage)
			return err
		}, as(new(*host.AuditBreakError))},
		{"AuditVerifyOptions", func(t *testing.T) error {
			_, err := host.AuditVerifyOptions(nil, garbage, "", "not base64!")
			return err
		}, nil},
		{"Host.Relock", func(t *testing.T) error {
			h := host.New(config(t, ""), host.Options{Dial: inProcess})
			defer h.Close()
			_, err := h.Relock(ctx, host.LockOptions{Agent: "bot", Server: "gh", Check: true})
			return err
		}, as(new(*host.UnknownServerError))},
		{"Host.Connect", func(t *testing.T) error {
			down := func(ctx context.Context, srv *host.Server) (*mcp.Client, error) {
				return nil, errors.New("connection refused")
			}
			h := host.New(config(t, ""), host.Options{Dial: down})
			defer h.Close()
			return h.Connect(ctx, "bot", "ts", true)
		}, nil},
		{"Host.CallTool unknown tool", func(t *testing.T) error {
			_, err := newHost(t, "").CallTool(ctx, "bot", "ts.ehco", map[string]any{}, nil)
			return err
		}, as(new(*host.UnknownToolError))},
		{"Host.AuthLogin", func(t *testing.T) error {
			return newHost(t, "").AuthLogin(ctx, "ts")
		}, as(new(*host.NotHTTPServerError))},
		{"Host.AuthStatus", func(t *testing.T) error {
			_, err := newHost(t, "").AuthStatus("gh")
			return err
		}, as(new(*host.UnknownServerError))},
		{"Host.OpenAudit", func(t *testing.T) error {
			return newHost(t, fmt.Sprintf("audit {\n  path = %q\n}\n", filepath.Join(garbage, "audit.jsonl"))).OpenAudit()
		}, nil},
		{"UpdateTrust", func(t *testing.T) error {
			return host.UpdateTrust(garbage, func(in []host.Trusted) ([]host.Trusted, error) { return in, nil })
		}, nil},
		{"NewGateway", func(t *testing.T) error {
			_, err := host.NewGateway(newHost(t, ""), host.GatewayOptions{Listen: "127.0.0.1:0", TLSCert: "cert.pem"})
			return err
		}, nil},
		{"Gateway.Handler", func(t *testing.T) error {
			// No listen address, so the handler is made on first call;
			// no agent has tokens and none is given, so it cannot be.
			g, err := host.NewGateway(newHost(t, ""), host.GatewayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			_, err = g.Handler()
			return err
		}, nil},
		{"Gateway.Handler closed", func(t *testing.T) error {
			g := gatewayOf(t, host.GatewayOptions{Listen: "127.0.0.1:0"})
			g.Close()
			_, err := g.Handler()
			return err
		}, func(err error) bool { return errors.Is(err, host.ErrGatewayClosed) }},
		{"Gateway.Serve closed", func(t *testing.T) error {
			g := gatewayOf(t, host.GatewayOptions{})
			g.Close()
			client, server := mcp.Pipe()
			defer client.Close()
			return g.Serve(ctx, server, "bot")
		}, func(err error) bool { return errors.Is(err, host.ErrGatewayClosed) }},
		{"Gateway.Run", func(t *testing.T) error {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			g := gatewayOf(t, host.GatewayOptions{Listen: taken.Addr().String()})
			defer g.Close()
			// A bound, so that a Run that serves after all ends the test;
			// it starts after setup and is generous on a loaded box.
			rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			if err := g.Run(rctx); err != nil {
				return err
			}
			return errors.New("Run listened on a port already taken")
		}, func(err error) bool {
			return strings.Contains(err.Error(), "127.0.0.1") && !strings.Contains(err.Error(), "already taken")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.call(t)
			if err == nil {
				t.Fatal("no error")
			}
			if c.want != nil && !c.want(err) {
				t.Errorf("not the error wanted: %T %v", err, err)
			}
			if bare := internalAlone(err); bare != nil {
				t.Errorf("%T is reachable by errors.As without a host type around it (in %T %v); convert it with hostErr, adding host's own type to the namers if it has none", bare, err, err)
			}
		})
	}
}

// internalAlone is the first error in err's tree, searched as errors.As
// searches it, whose type is an internal package's and that no error of
// host's wraps; nil when there is none.
func internalAlone(err error) error {
	if err == nil {
		return nil
	}
	switch pkg := pkgOf(err); {
	case pkg == "github.com/nexus-mcp/nexus/host":
		return nil // host's, and what it wraps is reached through it
	case strings.Contains(pkg, "/internal/"):
		return err
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return internalAlone(u.Unwrap())
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if bare := internalAlone(e); bare != nil {
				return bare
			}
		}
	}
	return nil
}

func pkgOf(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath()
}

// TestInternalAlone: the check above tells an internal error alone from
// one host's type wraps.
func TestInternalAlone(t *testing.T) {
	cfg := config(t, "")
	h := host.New(cfg, host.Options{Dial: inProcess})
	defer h.Close()
	_, err := h.ReadResource(context.Background(), "bot", "gh", "file:///x")
	var u *host.UnknownServerError
	if !errors.As(err, &u) || internalAlone(err) != nil {
		t.Fatalf("host's: %T %v", err, err)
	}
	if bare := internalAlone(errors.Unwrap(err)); bare == nil || !strings.Contains(pkgOf(bare), "/internal/registry") {
		t.Fatalf("the engine's, unwrapped: %T", bare)
	}
}

// config is the test server, agent bot and extra (HCL blocks).
func config(t *testing.T, extra string) *host.Config {
	t.Helper()
	cfg, err := host.ParseConfig([]byte(`
server "ts" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}
agent "bot" {
  permission = "yolo"
  allow      = ["ts.*"]
}
`+extra), "nexus.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newHost(t *testing.T, extra string) *host.Host {
	h := host.New(config(t, extra), host.Options{Dial: inProcess})
	t.Cleanup(func() { h.Close() })
	return h
}

// gatewayOf is a gateway whose agent bot has a token.
func gatewayOf(t *testing.T, o host.GatewayOptions) *host.Gateway {
	t.Helper()
	h := host.New(embedded(t, ""), host.Options{Dial: inProcess})
	t.Cleanup(func() { h.Close() })
	g, err := host.NewGateway(h, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
