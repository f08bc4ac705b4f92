package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// grpcPlugin is the one go-plugin plugin a Nexus binary serves. Its server
// side registers Meta and the kinds the author set.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	o    Options
	fast *decideServers // the Decide fast path answers with the same deciders
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterMetaServer(s, &metaServer{o: p.o})
	if p.o.Transport != nil {
		pb.RegisterTransportServer(s, &transportServer{t: p.o.Transport, sessions: map[string]*session{}})
	}
	if p.o.Policy != nil {
		d := newDeciders(func(ctx context.Context, cfg json.RawMessage) (Decider, error) {
			return p.o.Policy.NewPolicy(ctx, cfg)
		})
		pb.RegisterPolicyServer(s, &policyServer{d: d})
		if p.fast != nil {
			p.fast.policy.Store(d)
		}
	}
	if p.o.Sanitizer != nil {
		d := newDeciders(func(ctx context.Context, cfg json.RawMessage) (Decider, error) {
			return p.o.Sanitizer.NewSanitizer(ctx, cfg)
		})
		pb.RegisterSanitizerServer(s, &sanitizerServer{d: d})
		if p.fast != nil {
			p.fast.sanitizer.Store(d)
		}
	}
	return nil
}

// GRPCClient is never used on the plugin side.
func (p *grpcPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("the plugin SDK has no client side")
}

type metaServer struct {
	pb.UnimplementedMetaServer
	o Options
}

func (m *metaServer) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	vs := make([]int32, len(pb.ProtocolVersions))
	for i, v := range pb.ProtocolVersions {
		vs[i] = int32(v)
	}
	return &pb.InfoResponse{
		Kinds:            m.o.kinds(),
		ProtocolVersions: vs,
		ConfigSchemas:    m.o.schemas(),
		EventAbi:         event.ABI,
		Name:             m.o.Name,
		Version:          m.o.Version,
	}, nil
}

// recovered turns a panic in the author's code into an error, so one bad
// call does not take every session and filter of the plugin down with it.
func recovered(what string, err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "%s panicked: %v\n%s", what, r, debug.Stack())
	}
}

// configJSON is what the author gets for an absent config.
func configJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return json.RawMessage(b)
}

// ---- transport

type session struct {
	conn      Conn
	streaming atomic.Bool
}

type transportServer struct {
	pb.UnimplementedTransportServer
	t Transport

	mu       sync.Mutex
	next     uint64
	sessions map[string]*session
}

func (s *transportServer) Open(ctx context.Context, req *pb.OpenRequest) (resp *pb.OpenResponse, err error) {
	defer recovered("Transport.Open", &err)
	conn, err := s.t.Open(ctx, configJSON(req.Config))
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	if conn == nil {
		return nil, status.Error(codes.Internal, "Transport.Open returned no Conn and no error")
	}
	s.mu.Lock()
	s.next++
	id := strconv.FormatUint(s.next, 10)
	s.sessions[id] = &session{conn: conn}
	s.mu.Unlock()
	return &pb.OpenResponse{Session: id}, nil
}

func (s *transportServer) take(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	delete(s.sessions, id)
	return ss
}

func (s *transportServer) Close(_ context.Context, req *pb.CloseRequest) (*pb.CloseResponse, error) {
	s.mu.Lock()
	ss := s.sessions[req.Session]
	if ss != nil && !ss.streaming.Load() {
		delete(s.sessions, req.Session)
	}
	s.mu.Unlock()
	if ss != nil {
		ss.conn.Close()
	}
	return &pb.CloseResponse{}, nil
}

// Stream pumps frames both ways until either side ends. A clean end of the
// server's side (io.EOF) ends the stream cleanly; any other error ends it
// with that error's text, which the host shows.
func (s *transportServer) Stream(stream grpc.BidiStreamingServer[pb.Frame, pb.Frame]) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	ids := md.Get(pb.SessionMetadataKey)
	if len(ids) != 1 {
		return status.Error(codes.InvalidArgument, "stream without a session id")
	}
	s.mu.Lock()
	ss := s.sessions[ids[0]]
	if ss != nil && ss.streaming.Swap(true) {
		ss = nil // a session has one stream
	}
	s.mu.Unlock()
	if ss == nil {
		return status.Errorf(codes.NotFound, "unknown transport session %q", ids[0])
	}
	defer func() {
		s.take(ids[0])
		ss.conn.Close()
	}()

	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	done := make(chan error, 2)
	readerDone := make(chan struct{})

	// Server -> host. The only goroutine that calls Send.
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = status.Errorf(codes.Internal, "Conn.ReadMessage panicked: %v", r)
			}
			done <- err
			close(readerDone)
		}()
		for {
			msg, rerr := ss.conn.ReadMessage()
			if rerr != nil {
				if errors.Is(rerr, io.EOF) {
					err = nil
				} else {
					err = status.Error(codes.Aborted, rerr.Error())
				}
				return
			}
			if len(msg) > MaxFrameSize {
				err = status.Errorf(codes.ResourceExhausted, "the server sent a message of %d bytes, over the %d-byte frame limit", len(msg), MaxFrameSize)
				return
			}
			if serr := stream.Send(&pb.Frame{Data: msg}); serr != nil {
				err = serr
				return
			}
		}
	}()

	// Host -> server.
	go func() {
		var err error
		defer func() {
			if r := recover(); r != nil {
				err = status.Errorf(codes.Internal, "Conn.WriteMessage panicked: %v", r)
			}
			done <- err
		}()
		for {
			f, rerr := stream.Recv()
			if rerr != nil {
				if errors.Is(rerr, io.EOF) {
					rerr = nil // the host closed its side: the session is over
				}
				err = rerr
				return
			}
			if werr := ss.conn.WriteMessage(ctx, f.Data); werr != nil {
				err = status.Error(codes.Aborted, fmt.Sprintf("writing to the server: %v", werr))
				return
			}
		}
	}()

	err := <-done
	// Whichever side ended first, the session is over: closing the Conn
	// unblocks the reader, which must stop calling Send before the handler
	// returns. The host-to-server pump ends when the stream does.
	ss.conn.Close()
	cancel()
	select {
	case <-readerDone:
	case <-time.After(5 * time.Second):
	}
	return err
}

// ---- policy and sanitizer

// deciders holds the Decider of each configured filter instance.
type deciders struct {
	make func(context.Context, json.RawMessage) (Decider, error)
	next atomic.Uint64
	m    sync.Map // instance id -> Decider
}

func newDeciders(f func(context.Context, json.RawMessage) (Decider, error)) *deciders {
	return &deciders{make: f}
}

func (d *deciders) configure(ctx context.Context, req *pb.ConfigureRequest, what string) (resp *pb.ConfigureResponse, err error) {
	defer recovered(what, &err)
	dec, err := d.make(ctx, configJSON(req.Config))
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if dec == nil {
		return nil, status.Errorf(codes.Internal, "%s returned no Decider and no error", what)
	}
	id := strconv.FormatUint(d.next.Add(1), 10)
	d.m.Store(id, dec)
	return &pb.ConfigureResponse{Instance: id}, nil
}

func (d *deciders) decide(ctx context.Context, req *pb.DecideRequest, what string) (resp *pb.DecideResponse, err error) {
	v, ok := d.m.Load(req.Instance)
	if !ok {
		return nil, status.Errorf(codes.NotFound, "unknown instance %q", req.Instance)
	}
	var e event.Event
	if err := json.Unmarshal(req.Event, &e); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "the event is not valid JSON: %v", err)
	}
	if e.ABI != event.ABI {
		return nil, status.Errorf(codes.FailedPrecondition, "event ABI %d, but the plugin was built for ABI %d", e.ABI, event.ABI)
	}
	defer recovered(what, &err)
	dec, err := v.(Decider).Decide(ctx, &e)
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	b, err := json.Marshal(dec)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "the decision cannot be encoded: %v", err)
	}
	return &pb.DecideResponse{Decision: b}, nil
}

// failed is a failed call as a response, its status as code and message:
// how the Decisions stream and the fast path report one.
func failed(err error) *pb.DecideResponse {
	st := status.Convert(err)
	return &pb.DecideResponse{Code: int32(st.Code()), Error: st.Message()}
}

// decisions serves the Decisions stream: each request runs in its own
// goroutine (a slow or hung decision must not hold up the others) and its
// answer goes back tagged with its seq.
func (d *deciders) decisions(stream grpc.BidiStreamingServer[pb.DecideRequest, pb.DecideResponse], what string) error {
	var (
		smu     sync.Mutex // Send is called from many goroutines
		cmu     sync.Mutex
		cancels = map[uint64]context.CancelFunc{}
		wg      sync.WaitGroup
	)
	defer func() {
		cmu.Lock()
		for _, c := range cancels {
			c()
		}
		cmu.Unlock()
		wg.Wait()
	}()
	for {
		req, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if req.Cancel {
			cmu.Lock()
			if c := cancels[req.Seq]; c != nil {
				c()
			}
			cmu.Unlock()
			continue
		}
		ctx, cancel := context.WithCancel(stream.Context())
		cmu.Lock()
		cancels[req.Seq] = cancel
		cmu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := d.decide(ctx, req, what)
			cmu.Lock()
			delete(cancels, req.Seq)
			cmu.Unlock()
			cancel()
			if err != nil {
				resp = failed(err)
			}
			resp.Seq = req.Seq
			smu.Lock()
			stream.Send(resp)
			smu.Unlock()
		}()
	}
}

type policyServer struct {
	pb.UnimplementedPolicyServer
	d *deciders
}

func (p *policyServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	return p.d.configure(ctx, req, "Policy.NewPolicy")
}

func (p *policyServer) Decide(ctx context.Context, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	return p.d.decide(ctx, req, "Decide")
}

func (p *policyServer) Decisions(stream grpc.BidiStreamingServer[pb.DecideRequest, pb.DecideResponse]) error {
	return p.d.decisions(stream, "Decide")
}

type sanitizerServer struct {
	pb.UnimplementedSanitizerServer
	d *deciders
}

func (p *sanitizerServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	return p.d.configure(ctx, req, "Sanitizer.NewSanitizer")
}

func (p *sanitizerServer) Sanitize(ctx context.Context, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	return p.d.decide(ctx, req, "Sanitize")
}

func (p *sanitizerServer) Decisions(stream grpc.BidiStreamingServer[pb.DecideRequest, pb.DecideResponse]) error {
	return p.d.decisions(stream, "Sanitize")
}
