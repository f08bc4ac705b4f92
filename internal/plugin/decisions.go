package plugin

import (
	"context"
	"errors"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/nexus-mcp/nexus/internal/pluginwire"
)

// decisionStream multiplexes Decide (or Sanitize) calls over one long-lived
// Decisions stream, matched by seq. A unary gRPC call sets up an HTTP/2
// stream with headers and trailers each time; a message on an open stream
// does not, which is most of a policy round trip.
type decisionStream struct {
	stream grpc.BidiStreamingClient[pb.DecideRequest, pb.DecideResponse]
	cancel context.CancelFunc

	smu sync.Mutex // Send

	mu      sync.Mutex
	seq     uint64
	pending map[uint64]chan *pb.DecideResponse
	err     error
	done    chan struct{}
}

var chanPool = sync.Pool{New: func() any { return make(chan *pb.DecideResponse, 1) }}

func openDecisions(parent context.Context, open func(ctx context.Context) (grpc.BidiStreamingClient[pb.DecideRequest, pb.DecideResponse], error)) (*decisionStream, error) {
	ctx, cancel := context.WithCancel(parent)
	s, err := open(ctx)
	if err != nil {
		cancel()
		return nil, err
	}
	ds := &decisionStream{stream: s, cancel: cancel, pending: map[uint64]chan *pb.DecideResponse{}, done: make(chan struct{})}
	go ds.recv()
	return ds, nil
}

func (ds *decisionStream) recv() {
	for {
		r, err := ds.stream.Recv()
		if err != nil {
			ds.mu.Lock()
			ds.err = err
			ds.pending = nil
			ds.mu.Unlock()
			close(ds.done)
			ds.cancel()
			return
		}
		ds.mu.Lock()
		ch := ds.pending[r.Seq]
		delete(ds.pending, r.Seq)
		ds.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

func (ds *decisionStream) broken() bool {
	select {
	case <-ds.done:
		return true
	default:
		return false
	}
}

// call sends one request and waits for its answer, the caller's context,
// or the end of the stream.
func (ds *decisionStream) call(ctx context.Context, req *pb.DecideRequest) (*pb.DecideResponse, error) {
	ch := chanPool.Get().(chan *pb.DecideResponse)
	ds.mu.Lock()
	if ds.pending == nil {
		err := ds.err
		ds.mu.Unlock()
		return nil, err
	}
	ds.seq++
	seq := ds.seq
	ds.pending[seq] = ch
	ds.mu.Unlock()
	req.Seq = seq
	ds.smu.Lock()
	err := ds.stream.Send(req)
	ds.smu.Unlock()
	if err != nil {
		ds.forget(seq)
		<-ds.done // Send fails only once the stream is over; Recv has the reason
		return nil, ds.err
	}
	select {
	case r := <-ch:
		chanPool.Put(ch)
		return answered(r)
	case <-ctx.Done():
		if ds.forget(seq) {
			ds.smu.Lock()
			ds.stream.Send(&pb.DecideRequest{Seq: seq, Cancel: true})
			ds.smu.Unlock()
		}
		return nil, ctx.Err()
	case <-ds.done:
		return nil, ds.err
	}
}

// forget drops a pending call; false if its answer is already on the way.
func (ds *decisionStream) forget(seq uint64) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if _, ok := ds.pending[seq]; ok {
		delete(ds.pending, seq)
		return true
	}
	return false
}

// decisions returns the instance's open stream for kind, opening one if
// there is none or the last one broke. errUnary means the plugin has no
// Decisions method and calls go unary.
func (i *instance) decisions(sanitizer bool) (*decisionStream, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	cur := &i.policyStream
	if sanitizer {
		cur = &i.sanitizerStream
	}
	if *cur != nil && !(*cur).broken() {
		return *cur, nil
	}
	if *cur != nil && status.Code((*cur).err) == codes.Unimplemented {
		return nil, errUnary
	}
	var open func(ctx context.Context) (grpc.BidiStreamingClient[pb.DecideRequest, pb.DecideResponse], error)
	if sanitizer {
		open = func(ctx context.Context) (grpc.BidiStreamingClient[pb.DecideRequest, pb.DecideResponse], error) {
			return i.sanitizer.Decisions(ctx)
		}
	} else {
		open = func(ctx context.Context) (grpc.BidiStreamingClient[pb.DecideRequest, pb.DecideResponse], error) {
			return i.policy.Decisions(ctx)
		}
	}
	ds, err := openDecisions(i.ctx, open)
	if err != nil {
		return nil, err
	}
	*cur = ds
	return ds, nil
}

var errUnary = errors.New("plugin: Decisions not implemented")

// answered is a response of the Decisions stream or the fast path, which
// carry a failed call as a code and message: as the unary call's error.
func answered(r *pb.DecideResponse) (*pb.DecideResponse, error) {
	if r.Code != 0 {
		return nil, status.Error(codes.Code(r.Code), r.Error)
	}
	return r, nil
}
