package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// echoConn answers every frame with itself, then io.EOF after "bye".
type echoConn struct {
	in     chan []byte
	closed chan struct{}
}

func newEchoConn() *echoConn { return &echoConn{in: make(chan []byte, 8), closed: make(chan struct{})} }

func (c *echoConn) ReadMessage() ([]byte, error) {
	select {
	case m := <-c.in:
		if string(m) == `"bye"` {
			return nil, io.EOF
		}
		if string(m) == `"break"` {
			return nil, errors.New("upstream reset the connection")
		}
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *echoConn) WriteMessage(_ context.Context, m []byte) error {
	c.in <- append([]byte(nil), m...)
	return nil
}

func (c *echoConn) Close() error {
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
	return nil
}

type echoTransport struct{}

func (echoTransport) Open(_ context.Context, cfg json.RawMessage) (Conn, error) {
	if strings.Contains(string(cfg), "refuse") {
		return nil, errors.New("connection refused")
	}
	return newEchoConn(), nil
}

func (echoTransport) ConfigSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }

type denyPolicy struct{}

func (denyPolicy) NewPolicy(_ context.Context, cfg json.RawMessage) (Decider, error) {
	var c struct{ Tool string }
	if err := json.Unmarshal(cfg, &c); err != nil {
		return nil, err
	}
	return DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		if e.Tool != nil && e.Tool.Name == "panic" {
			panic("kaboom")
		}
		if e.Tool != nil && e.Tool.Name == c.Tool {
			return Deny("no " + c.Tool), nil
		}
		return Allow(), nil
	}), nil
}

func serve(t *testing.T, o Options) (pb.MetaClient, pb.TransportClient, pb.PolicyClient) {
	t.Helper()
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{pb.SetName: &grpcPlugin{o: o}})
	// Not client.Close: its Shutdown call would race with Stop inside go-plugin.
	t.Cleanup(func() { client.Conn.Close(); server.Stop() })
	return pb.NewMetaClient(client.Conn), pb.NewTransportClient(client.Conn), pb.NewPolicyClient(client.Conn)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestInfo(t *testing.T) {
	meta, _, _ := serve(t, Options{Name: "x", Version: "1.2", Transport: echoTransport{}, Policy: denyPolicy{}})
	info, err := meta.Info(ctxT(t), &pb.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.Kinds, ",") != "transport,policy" || info.ProtocolVersions[0] != 1 || info.EventAbi != event.ABI ||
		string(info.ConfigSchemas["transport"]) != `{"type":"object"}` || info.ConfigSchemas["policy"] != nil || info.Name != "x" {
		t.Fatalf("info %+v", info)
	}
}

func TestValidate(t *testing.T) {
	if err := (Options{}).validate(); err == nil || !strings.Contains(err.Error(), "at least one kind") {
		t.Errorf("no kinds: %v", err)
	}
	bad := badSchema{}
	if err := (Options{Policy: bad}).validate(); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("bad schema: %v", err)
	}
}

type badSchema struct{ denyPolicy }

func (badSchema) ConfigSchema() json.RawMessage { return json.RawMessage(`{"type":`) }

func ev(tool string) []byte {
	b, _ := json.Marshal(event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call", Tool: &event.Tool{Name: tool}})
	return b
}

func TestPolicy(t *testing.T) {
	_, _, pol := serve(t, Options{Policy: denyPolicy{}})
	ctx := ctxT(t)
	cr, err := pol.Configure(ctx, &pb.ConfigureRequest{Name: "f", Config: []byte(`{"tool": "rm"}`)})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(tool string) (event.Decision, error) {
		r, err := pol.Decide(ctx, &pb.DecideRequest{Instance: cr.Instance, Event: ev(tool)})
		if err != nil {
			return event.Decision{}, err
		}
		var d event.Decision
		json.Unmarshal(r.Decision, &d)
		return d, nil
	}
	if d, err := decide("rm"); err != nil || d.Action != event.Deny || d.Reason != "no rm" {
		t.Errorf("rm: %+v %v", d, err)
	}
	if _, err := decide("panic"); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "Decide panicked: kaboom") {
		t.Errorf("panic: %v", err)
	}
	if d, err := decide("ls"); err != nil || d.Action != event.Allow {
		t.Errorf("after a panic: %+v %v", d, err)
	}
	_, err = pol.Decide(ctx, &pb.DecideRequest{Instance: "nope", Event: ev("ls")})
	if status.Code(err) != codes.NotFound {
		t.Errorf("unknown instance: %v", err)
	}
	_, err = pol.Decide(ctx, &pb.DecideRequest{Instance: cr.Instance, Event: []byte(`{"abi": 2}`)})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("abi: %v", err)
	}
	if _, err := pol.Configure(ctx, &pb.ConfigureRequest{Config: []byte(`[`)}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("bad config: %v", err)
	}

	// Decisions: many calls on one stream, matched by seq.
	st, err := pol.Decisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, tool := range []string{"rm", "ls", "panic"} {
		st.Send(&pb.DecideRequest{Instance: cr.Instance, Event: ev(tool), Seq: uint64(i + 1)})
	}
	got := map[uint64]*pb.DecideResponse{}
	for range 3 {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got[r.Seq] = r
	}
	if !strings.Contains(string(got[1].Decision), "deny") || !strings.Contains(string(got[2].Decision), "allow") ||
		got[3].Code != int32(codes.Internal) || !strings.Contains(got[3].Error, "kaboom") {
		t.Errorf("decisions: %v", got)
	}
	st.CloseSend()
}

func TestTransportStream(t *testing.T) {
	_, tr, _ := serve(t, Options{Transport: echoTransport{}})
	ctx := ctxT(t)
	if _, err := tr.Open(ctx, &pb.OpenRequest{Config: []byte(`{"refuse": true}`)}); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("refused: %v", err)
	}
	open := func() pb.Transport_StreamClient {
		r, err := tr.Open(ctx, &pb.OpenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := tr.Stream(metadata.AppendToOutgoingContext(ctx, pb.SessionMetadataKey, r.Session))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	st.Send(&pb.Frame{Data: []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)})
	f, err := st.Recv()
	if err != nil || string(f.Data) != `{"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Fatalf("echo: %s %v", f.GetData(), err)
	}
	st.Send(&pb.Frame{Data: []byte(`"bye"`)})
	if _, err := st.Recv(); err != io.EOF {
		t.Errorf("clean end: %v", err)
	}
	st = open()
	st.Send(&pb.Frame{Data: []byte(`"break"`)})
	if _, err := st.Recv(); status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "upstream reset the connection") {
		t.Errorf("broken upstream: %v", err)
	}
	// A stream for a session that does not exist.
	bad, _ := tr.Stream(metadata.AppendToOutgoingContext(ctx, pb.SessionMetadataKey, "42"))
	if _, err := bad.Recv(); status.Code(err) != codes.NotFound {
		t.Errorf("unknown session: %v", err)
	}
}
