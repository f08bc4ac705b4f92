package plugin

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// The plugin's side of the Decide fast path: it listens where the
// environment says, serves a connection only after the token, and answers
// each request frame with the same deciders gRPC serves, failures as codes.
func TestFastPathServe(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "decide.sock")
	token := make([]byte, pb.DecideTokenSize)
	token[0] = 7
	t.Setenv(pb.DecideSocketEnv, sock)
	t.Setenv(pb.DecideTokenEnv, hex.EncodeToString(token))
	s := &decideServers{}
	d := newDeciders(func(ctx context.Context, cfg json.RawMessage) (Decider, error) {
		return denyPolicy{}.NewPolicy(ctx, cfg)
	})
	s.policy.Store(d)
	cr, err := d.configure(context.Background(), &pb.ConfigureRequest{Config: []byte(`{"tool": "rm"}`)}, "NewPolicy")
	if err != nil {
		t.Fatal(err)
	}
	ln := serveFastPath(s)
	if ln == nil {
		t.Fatal("no listener")
	}
	defer ln.Close()
	if os.Getenv(pb.DecideTokenEnv) != "" {
		t.Error("the token stays in the environment for the plugin's own children")
	}

	dial := func(tok []byte) net.Conn {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(tok)
		return c
	}
	call := func(c net.Conn, kind byte, req *pb.DecideRequest) (*pb.DecideResponse, error) {
		b, err := pb.AppendDecideRequest(nil, kind, time.Now().Add(time.Minute), req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(b); err != nil {
			return nil, err
		}
		body, err := pb.ReadFrame(c, nil, pb.MaxGRPCMessage)
		if err != nil {
			return nil, err
		}
		return pb.ParseDecideResponse(body)
	}

	bad := append([]byte(nil), token...)
	bad[0] = 8
	if _, err := call(dial(bad), pb.FramePolicy, &pb.DecideRequest{Instance: cr.Instance, Event: ev("rm")}); err == nil {
		t.Fatal("a connection with the wrong token was answered")
	}
	c := dial(token)
	for range 2 { // one connection, calls one after another
		r, err := call(c, pb.FramePolicy, &pb.DecideRequest{Instance: cr.Instance, Event: ev("rm")})
		if err != nil || r.Code != 0 {
			t.Fatalf("%v %+v", err, r)
		}
		var dec event.Decision
		if json.Unmarshal(r.Decision, &dec); dec.Action != event.Deny {
			t.Fatalf("decision %s", r.Decision)
		}
	}
	for _, tc := range []struct {
		kind byte
		req  *pb.DecideRequest
		code codes.Code
		msg  string
	}{
		{pb.FrameSanitizer, &pb.DecideRequest{Instance: cr.Instance, Event: ev("rm")}, codes.Unimplemented, "does not serve Sanitize"},
		{pb.FramePolicy, &pb.DecideRequest{Instance: "nope", Event: ev("rm")}, codes.NotFound, "unknown instance"},
		{pb.FramePolicy, &pb.DecideRequest{Instance: cr.Instance, Event: ev("panic")}, codes.Internal, "Decide panicked: kaboom"},
	} {
		r, err := call(c, tc.kind, tc.req)
		if err != nil || codes.Code(r.Code) != tc.code || !strings.Contains(r.Error, tc.msg) {
			t.Errorf("%c %s: %v %+v", tc.kind, tc.req.Instance, err, r)
		}
	}
	// A frame that is not a request is answered as one, with a code.
	frame := []byte{0, 0, 0, 3, 'x', 1, 2}
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	body, err := pb.ReadFrame(c, nil, pb.MaxGRPCMessage)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := pb.ParseDecideResponse(body); r == nil || codes.Code(r.Code) != codes.InvalidArgument {
		t.Errorf("a malformed request frame: %+v", r)
	}
	// A frame over the limit ends the connection.
	if _, err := c.Write([]byte{0xff, 0xff, 0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.ReadFrame(c, nil, pb.MaxGRPCMessage); err != io.EOF && !strings.Contains(fmt.Sprint(err), "reset") {
		t.Errorf("after an oversized frame: %v, want the connection closed", err)
	}
}
