package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// The relay carries a retry to the replica holding its call (issue 38).
// A bridged call lives in the process whose upstream connection runs it
// (bridge.go); the agent's retry may reach any replica (round robin, no
// stickiness). Each replica listens on a channel of its own on the
// session store's bus (relayChannel and its replica id). A retry whose
// state names another replica is published on that replica's channel,
// naming this one's for the answer; the owner acknowledges it at once,
// opens and checks its state as if the retry had reached it, resumes
// the call, says every relayBeat that it still runs it, and publishes
// what the retry answers.
//
// A call runs at most once. A retry nobody receives (the bus counted no
// subscriber: the owner is gone, its call with it), or that is not
// acknowledged within relayAck, gets the retryable error and the state
// stays unspent: an owner drops a retry it receives after relayAck
// (replicas' clocks are assumed to agree within relayGrace). An owner
// that falls silent after taking a retry took the call with it: the
// agent is told so, retryable. Messages on the bus are untrusted: they
// are bounded, and the owner opens and checks the state itself.
//
// What the call sends the agent while the owner runs a forwarded retry
// (the server's progress and log messages) goes back to the forwarding
// replica as notes, in order and before the answer, and from there on
// the agent's request (relayed); a note that does not fit the queue is
// dropped, as a slow stream's would be.

const (
	relayChannel  = "bridge:"
	relayAck      = 10 * time.Second // an owner acknowledges a retry within this, or drops it
	relayGrace    = 5 * time.Second  // how much later an acknowledgment is still waited for
	relayBeat     = 2 * time.Second  // an owner running a retry says so this often
	relayQuiet    = 20 * time.Second // an owner silent this long is gone
	relayMaxWaits = 1024             // retries this replica waits for at once
	relayMaxRuns  = 256              // retries this replica runs for others at once
	relayMaxReply = 64               // a reply channel's length
	relayNotes    = 64               // notes a forwarded retry queues for its sender
)

// relayMsg is a message on the bus.
type relayMsg struct {
	Kind string `json:"k"` // retry, took (acknowledged, or still running), note, done, gone (the agent went away)
	ID   string `json:"id"`
	// A retry: where to answer, until when it may be taken, and the
	// request as the forwarding replica got and checked it.
	Reply  string          `json:"reply,omitempty"`
	Until  int64           `json:"until,omitempty"` // unix ms
	Agent  string          `json:"agent,omitempty"`
	Method string          `json:"method,omitempty"`
	Target string          `json:"target,omitempty"`
	Args   []byte          `json:"args,omitempty"` // the binding's hash
	Meta   json.RawMessage `json:"meta,omitempty"`
	Input  json.RawMessage `json:"input,omitempty"` // inputResponses
	State  string          `json:"state,omitempty"`
	// An answer: one of them.
	Result json.RawMessage          `json:"result,omitempty"`
	Error  *mcp.RPCError            `json:"error,omitempty"`
	Ask    *mcp.InputRequiredResult `json:"ask,omitempty"`
	// A note: a notification of the call for the agent.
	Note *relayNote `json:"note,omitempty"`
}

// relayNote is a notification a forwarded retry's call sends the agent.
type relayNote struct {
	Method string          `json:"m"`
	Params json.RawMessage `json:"p"`
}

// noted are the notifications a note may carry.
var noted = map[string]bool{mcp.NotificationProgress: true, mcp.NotificationMessage: true}

// relay is a replica's end of the bus.
type relay struct {
	br   *bridge
	st   store.Store
	self string // this replica's channel
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu    sync.Mutex
	waits map[string]*relayWait         // retries forwarded, waiting for their answer
	runs  map[string]context.CancelFunc // retries run for other replicas
}

// relayWait is a forwarded retry waiting for its answer.
type relayWait struct {
	heard chan struct{} // took: the owner is there
	notes chan relayMsg
	done  chan relayMsg
}

// relayed is an attempt another replica forwarded here: what its call
// sends the agent (bcall.notify) is queued for that replica.
type relayed struct {
	r     *relay
	reply string
	id    string
	q     chan relayMsg
}

type relayedKey struct{}

// relayedOf is the forwarded attempt whose context ctx is, or nil.
func relayedOf(ctx context.Context) *relayed {
	if ctx == nil {
		return nil
	}
	x, _ := ctx.Value(relayedKey{}).(*relayed)
	return x
}

// note queues a notification for the replica that forwarded the
// attempt; one that does not fit is dropped.
func (x *relayed) note(method string, params any) {
	raw, err := json.Marshal(params)
	if err != nil {
		return
	}
	select {
	case x.q <- relayMsg{Kind: "note", ID: x.id, Note: &relayNote{Method: method, Params: raw}}:
	default:
		x.r.br.g.log.Debug("a notification of a forwarded retry's call was dropped: the replica that forwarded it has too many queued", "method", method)
	}
}

// sendNotes sends x's queued notes until stop, then those left: all
// before the retry's answer.
func (x *relayed) sendNotes(stop <-chan struct{}) {
	for {
		select {
		case n := <-x.q:
			x.r.send(x.reply, n)
		case <-stop:
			for {
				select {
				case n := <-x.q:
					x.r.send(x.reply, n)
				default:
					return
				}
			}
		}
	}
}

func replicaChannel(id [8]byte) string { return relayChannel + hex.EncodeToString(id[:]) }

// startRelay makes the bridge forward retries over st, and take those
// other replicas forward: it returns once this replica listens (or the
// first attempt failed; it keeps trying), and ends when the gateway
// closes.
func (br *bridge) startRelay(st store.Store) {
	ctx, stop := context.WithCancel(context.Background())
	r := &relay{br: br, st: st, self: replicaChannel(br.seal.replica), ctx: ctx, stop: stop,
		waits: map[string]*relayWait{}, runs: map[string]context.CancelFunc{}}
	r.wg.Add(1) // before close can see r
	br.mu.Lock()
	if br.relay != nil {
		br.mu.Unlock()
		r.wg.Done()
		stop()
		return // one per gateway: a second listener (another HTTP handler) adds nothing
	}
	br.relay = r
	br.forward = r.forward
	br.mu.Unlock()
	first := make(chan struct{})
	go r.listen(first)
	select {
	case <-first:
	case <-time.After(relayAck):
	}
}

// close stops listening, ends the retries run for others, and waits for
// them.
func (r *relay) close() {
	r.stop()
	r.wg.Wait()
}

// listen receives this replica's messages, subscribing again when the
// store's connection is lost.
func (r *relay) listen(first chan struct{}) {
	defer r.wg.Done()
	wait := 100 * time.Millisecond
	for r.ctx.Err() == nil {
		msgs, cancel, err := r.st.Subscribe(r.ctx, r.self)
		if first != nil {
			close(first)
			first = nil
		}
		if errors.Is(err, store.ErrClosed) {
			return // the process is shutting down
		}
		if err != nil {
			r.br.g.log.Warn("cannot hear the other replicas' retries of calls waiting here; retrying", "error", oneLine(err), "in", wait)
			select {
			case <-r.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
			continue
		}
		wait = 100 * time.Millisecond
		for m := range msgs {
			r.onMessage(m)
		}
		cancel()
	}
}

// onMessage takes one message off the bus.
func (r *relay) onMessage(raw []byte) {
	var m relayMsg
	if len(raw) > store.MaxMessageBytes || json.Unmarshal(raw, &m) != nil || m.ID == "" || len(m.ID) > 64 {
		r.br.g.log.Warn("a message on this replica's bridge channel is not one the gateway sends; dropped (does something else publish on the session store?)", "bytes", len(raw))
		return
	}
	switch m.Kind {
	case "retry":
		r.take(m)
	case "took", "note", "done":
		r.mu.Lock()
		w := r.waits[m.ID]
		r.mu.Unlock()
		switch {
		case w == nil: // given up on, or not ours
		case m.Kind == "note":
			if m.Note == nil || !noted[m.Note.Method] {
				return
			}
			select {
			case w.notes <- m:
			default: // the agent's stream is behind: dropped
			}
		case m.Kind == "done":
			select {
			case w.done <- m:
			default: // answered already
			}
		default:
			select {
			case w.heard <- struct{}{}:
			default: // heard already
			}
		}
	case "gone":
		r.mu.Lock()
		cancel := r.runs[m.ID]
		r.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}
}

// take runs a retry another replica forwarded: acknowledged at once,
// run as if it had come here, answered on its reply channel.
func (r *relay) take(m relayMsg) {
	if !strings.HasPrefix(m.Reply, relayChannel) || len(m.Reply) > relayMaxReply {
		r.br.g.log.Warn("a forwarded retry names no reply channel of the bridge; dropped", "reply", m.Reply)
		return
	}
	if time.Now().UnixMilli() > m.Until {
		// The forwarding replica has given up on it: taken now, the call
		// would go on with nobody to hear how it ends.
		r.br.g.log.Warn("a forwarded retry came after its sender stopped waiting; dropped (its call still waits for a retry)", "late", time.Since(time.UnixMilli(m.Until)).String())
		return
	}
	r.mu.Lock()
	if len(r.runs) >= relayMaxRuns || r.ctx.Err() != nil {
		n := len(r.runs)
		r.mu.Unlock()
		r.send(m.Reply, relayMsg{Kind: "done", ID: m.ID, Error: retryable(fmt.Sprintf(
			"the gateway replica holding this call runs %d retries forwarded by other replicas, its limit (or it is shutting down); retry the request", n))})
		return
	}
	if _, dup := r.runs[m.ID]; dup {
		r.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	r.runs[m.ID] = cancel
	r.wg.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.runs, m.ID)
			r.mu.Unlock()
			cancel()
		}()
		r.send(m.Reply, relayMsg{Kind: "took", ID: m.ID})
		beats := make(chan struct{})
		go func() {
			defer close(beats)
			t := time.NewTicker(relayBeat)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					r.send(m.Reply, relayMsg{Kind: "took", ID: m.ID})
				}
			}
		}()
		x := &relayed{r: r, reply: m.Reply, id: m.ID, q: make(chan relayMsg, relayNotes)}
		stopNotes, notesSent := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(notesSent)
			x.sendNotes(stopNotes)
		}()
		out := r.br.resumeRelayed(context.WithValue(ctx, relayedKey{}, x), m)
		close(stopNotes)
		<-notesSent
		cancel()
		<-beats
		out.Kind, out.ID = "done", m.ID
		r.send(m.Reply, out)
	}()
}

// resumeRelayed is resume for a retry another replica forwarded: its
// state is opened and checked here, as bridged does, and held to this
// replica (no second hop).
func (br *bridge) resumeRelayed(ctx context.Context, m relayMsg) relayMsg {
	b := binding{method: m.Method, target: m.Target}
	if len(m.Args) != len(b.args) {
		return relayMsg{Error: mcp.InvalidParams("a forwarded retry's request has no binding the gateway made")}
	}
	copy(b.args[:], m.Args)
	st, err := br.seal.open(m.State)
	if err == nil {
		err = st.check(m.Agent, b, time.Now())
	}
	if err == nil && (st.upstream || st.replica != br.seal.replica) {
		err = badState("was forwarded to a replica that does not hold its call")
	}
	if err != nil {
		return relayMsg{Error: br.g.asRPC(m.Agent, err)}
	}
	meta, modern, err := mcp.ParseRequestMeta(slices.Concat([]byte(`{"_meta":`), m.Meta, []byte(`}`)))
	if err != nil || !modern {
		return relayMsg{Error: mcp.InvalidParams("a forwarded retry's _meta is not an MCP 2026-07-28 request's: %v", err)}
	}
	in := &mcp.InputParams{RequestState: m.State}
	if len(m.Input) > 0 {
		if err := json.Unmarshal(m.Input, &in.InputResponses); err != nil {
			return relayMsg{Error: mcp.InvalidParams("inputResponses must be an object of results by key: %v", err)}
		}
	}
	// The retry's own _meta: its progress token, for what the call sends
	// meanwhile (bcall.notify brings it back here).
	params := slices.Concat([]byte(`{"_meta":`), m.Meta, []byte(`}`))
	res, err, ask := br.resume(ctx, st, &meta, in, m.Method, params)
	switch {
	case ask != nil:
		return relayMsg{Ask: ask}
	case err != nil:
		return relayMsg{Error: br.g.asRPC(m.Agent, err)}
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return relayMsg{Error: &mcp.RPCError{Code: mcp.CodeInternalError, Message: "the call's result does not encode as JSON: " + err.Error()}}
	}
	return relayMsg{Result: raw}
}

// deliver sends a note of a forwarded retry's call to the agent, on
// the retry's request (ctx).
func deliver(ctx context.Context, n *relayNote) {
	if s, ok := mcp.HandlerOf(ctx).(*session); ok {
		_ = s.peer.Notify(ctx, n.Method, n.Params)
	}
}

// asRPC is err as the JSON-RPC error agent gets.
func (g *Gateway) asRPC(agent string, err error) *mcp.RPCError {
	if rerr, ok := g.rpcErrorOf(agent, err).(*mcp.RPCError); ok {
		return rerr
	}
	return &mcp.RPCError{Code: mcp.CodeInternalError, Message: oneLine(err)}
}

// retryable is the error of a retry that may succeed if sent again.
func retryable(msg string) *mcp.RPCError {
	return &mcp.RPCError{Code: mcp.CodeInternalError, Data: json.RawMessage(`{"retryable":true}`), Message: msg}
}

// send publishes m on channel, bounded by one store operation's time: a
// message that cannot be sent is logged (its waiter gives up in time).
func (r *relay) send(channel string, m relayMsg) {
	raw, err := json.Marshal(m)
	if err == nil && len(raw) > store.MaxMessageBytes {
		// Too large for the bus: the agent is told, and the call's
		// outcome is lost (it ran).
		raw, err = json.Marshal(relayMsg{Kind: m.Kind, ID: m.ID, Error: &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf(
			"the call's answer is %d bytes, over the %d bytes the gateway replicas pass each other; the call ran on the replica that held it, and its answer was dropped", len(raw), store.MaxMessageBytes)}})
	}
	if err != nil {
		r.br.g.log.Error("a bridge message does not encode", "error", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), relayAck)
	defer cancel()
	if _, err := r.st.Publish(ctx, channel, raw); err != nil {
		r.br.g.log.Warn("cannot answer a replica over the session store", "kind", m.Kind, "error", oneLine(err))
	}
}

// forward sends a retry whose state names another replica there and
// waits for its answer (br.forward).
func (r *relay) forward(ctx context.Context, st *state, in *mcp.InputParams, params json.RawMessage) (any, error, *mcp.InputRequiredResult) {
	owner := replicaChannel(st.replica)
	var id [16]byte
	rand.Read(id[:])
	m := relayMsg{Kind: "retry", ID: hex.EncodeToString(id[:]), Reply: r.self, Until: time.Now().Add(relayAck).UnixMilli(),
		Agent: st.agent, Method: st.bind.method, Target: st.bind.target, Args: st.bind.args[:], Meta: scan(params).meta, State: in.RequestState}
	if len(in.InputResponses) > 0 {
		m.Input, _ = json.Marshal(in.InputResponses)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err, nil
	}
	if len(raw) > store.MaxMessageBytes {
		return nil, retryable(fmt.Sprintf("this call waits for its input on gateway replica %x, and the retry is %d bytes, over the %d bytes the replicas pass each other; retry it (it may reach that replica), or answer with less",
			st.replica, len(raw), store.MaxMessageBytes)), nil
	}
	w := &relayWait{heard: make(chan struct{}, 1), notes: make(chan relayMsg, relayNotes), done: make(chan relayMsg, 1)}
	r.mu.Lock()
	if len(r.waits) >= relayMaxWaits {
		r.mu.Unlock()
		return nil, retryable(fmt.Sprintf("this gateway replica forwards %d retries to other replicas already, its limit; retry the request", relayMaxWaits)), nil
	}
	r.waits[m.ID] = w
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waits, m.ID)
		r.mu.Unlock()
	}()
	pctx, cancel := context.WithTimeout(ctx, relayAck)
	n, err := r.st.Publish(pctx, owner, raw)
	cancel()
	if err != nil {
		return nil, retryable(fmt.Sprintf("this call waits for its input on gateway replica %x, and this replica cannot reach it through the session store (%s); retry the request", st.replica, oneLine(err))), nil
	}
	if n == 0 {
		return nil, retryable(fmt.Sprintf("this call waited for its input on gateway replica %x, which is gone (nothing listens on its channel of the session store: it stopped or crashed, and the call ended with it); send the request again without inputResponses and requestState to start over", st.replica)), nil
	}
	quiet := time.NewTimer(relayAck + relayGrace)
	defer quiet.Stop()
	took := false
	for {
		select {
		case n := <-w.notes:
			took = true
			quiet.Reset(relayQuiet)
			deliver(ctx, n.Note)
		case a := <-w.done:
			for len(w.notes) > 0 { // sent before the answer: delivered first
				deliver(ctx, (<-w.notes).Note)
			}
			switch {
			case a.Ask != nil:
				return nil, nil, a.Ask
			case a.Error != nil:
				return nil, a.Error, nil
			}
			res := json.RawMessage(a.Result)
			return &res, nil, nil
		case <-w.heard:
			took = true
			quiet.Reset(relayQuiet)
		case <-quiet.C:
			if !took {
				return nil, retryable(fmt.Sprintf("this call waits for its input on gateway replica %x, which did not take the retry within %s (overloaded, or stopping); retry the request", st.replica, relayAck)), nil
			}
			return nil, retryable(fmt.Sprintf("gateway replica %x took this retry and then fell silent for %s (it stopped or crashed): the call ended with it; send the request again without inputResponses and requestState to start over", st.replica, relayQuiet)), nil
		case <-ctx.Done():
			// The agent went away: the owner ends the call, as it would
			// had the retry reached it.
			r.send(owner, relayMsg{Kind: "gone", ID: m.ID})
			return nil, ctx.Err(), nil
		}
	}
}
