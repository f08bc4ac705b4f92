package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/wire"
)

// The era bridge, modern agent to legacy upstream (issue 38). A modern
// request (MCP 2026-07-28) runs on its agent's shared connection to the
// server: one per agent and server, made on first use. A legacy server
// asks the client mid-call (sampling/createMessage, elicitation/create,
// roots/list); a modern agent cannot be asked mid-call, so the bridge
// keeps the upstream call running, holds the server's request, and
// answers the agent input_required with the question and a sealed
// requestState (state.go) that names the call. The agent's retry
// carries the answers: they go to the waiting server request, and the
// call goes on, perhaps to another round. The call is the chain's one
// event: decided once, audited once (its record carries the call id).
//
// Which call a server request belongs to (owner): the connection is
// the agent's, shared by its modern calls and by the calls of its legacy
// sessions whose clients answer no server requests. Over streamable
// HTTP a request comes on the response stream of the call it belongs to
// (mcp.CallOf): that bridged call's (bcallOf on the upstream call's
// context), or, if that call is no bridged call's (a legacy session's),
// outside any modern call. Where the transport does not say (stdio, the
// standalone stream): the agent's newest bridged call to that server
// still running, else its newest one parked; but while a legacy
// session's call is in flight there too (session.track counts them), a
// sampling or elicitation request could be either's, and is refused,
// saying why and what to change, and logged (a roots/list gets the
// agent's configured roots). A question that comes while its call is
// parked waits for the retry and is asked in the next round. Outside any
// call, roots/list is answered with the agent's configured roots and
// sampling and elicitation are refused, saying why.
//
// A round's questions are gathered: a server may ask several at once
// (from goroutines of its own), and nothing says when the last has been
// sent, so the round is handed out once none came for gatherQuiet. That
// wait costs the gateway far more CPU than the round itself (the
// agent's session hands its reading to a new goroutine, threads sleep
// and wake), so a request whose calls asked one question each, soloAfter
// in a row (isSolo: the same server, method and tool or uri), is handed
// out as soon as every request the upstream connection has read has
// reached the bridge (bcall.more: mcp.Peer.Incoming against the
// questions inside bridge.ask). A question that comes after its round
// was handed out is not lost: it goes to the next round, and its
// request gathers for gatherQuiet again.

// Defaults of the bridge's bounds.
const (
	defaultInputTTL        = 5 * time.Minute
	defaultMaxParked       = 1024
	defaultMaxParkedPer    = 64
	gatherQuiet            = 15 * time.Millisecond  // more questions of one round come within this of each other
	gatherPoll             = 100 * time.Microsecond // while the connection read more, how often a solo round looks again
	soloAfter              = 8                      // rounds of one question each, in a row, that make a request solo
	maxSolo                = 4096                   // requests whose rounds the bridge keeps count of
	gatherMax              = 150 * time.Millisecond // a round's questions are gathered this long at most
	maxAsksPerCall         = 64                     // questions one call may have pending
	maxSpent               = 1 << 16                // ended calls remembered, to tell a replay from a lost call
	defaultUpstreamIdle    = 10 * time.Minute
	defaultMaxUpstreams    = 4096
	defaultMaxUpstreamsPer = 64
	closeDrain             = 2 * time.Second  // at Close, calls whose servers' requests were refused get this long to end
	runnerIdle             = 30 * time.Second // a runner with no call to run ends after this
)

// bridge holds the bridged calls in flight.
type bridge struct {
	g      *Gateway
	seal   *sealer
	ttl    time.Duration
	maxAll int
	maxPer int
	// forward takes a retry whose state names another replica to it
	// (relay.go, over the session store's bus); nil (no store): the agent
	// gets a retryable error.
	forward func(ctx context.Context, st *state, in *mcp.InputParams, params json.RawMessage) (any, error, *mcp.InputRequiredResult)
	relay   *relay

	mu     sync.Mutex
	calls  map[[16]byte]*bcall
	open   map[string][]*bcall // agent + "\x00" + server -> calls in flight, oldest first
	parked map[string]int      // parked calls by agent
	nPark  int
	spent  map[[16]byte]spent // ended calls, to say why their state is no good
	ups    map[string]*upstreamUse
	upsBy  map[string]int         // ups by agent
	tasks  map[string][]*followed // agent + "\x00" + server -> tasks followed, oldest first
	asking map[string]int         // agent + "\x00" + server -> server requests inside ask
	legacy map[[2]string]int      // {agent, server} -> legacy sessions' calls in flight on the shared connection (session.track); no key to build per call
	solo   map[string]int         // soloKey -> rounds of one question in a row (isSolo)

	// Runners run the bridged calls (run): goroutines that wait for the
	// next call once theirs has ended, keeping the stack it grew.
	work     chan func()
	quit     chan struct{} // closed by close: idle runners end
	quitOnce sync.Once
}

// upstreamUse is an agent's connection to a server that modern calls use:
// in use while a call is open, ended once idle for Options.UpstreamIdle.
type upstreamUse struct {
	agent, server string
	open          int
	idle          *time.Timer
}

// spent is an ended call: until when its states could come back, and
// what they are told.
type spent struct {
	until int64
	why   string
}

func newBridge(g *Gateway, key []byte, replica [8]byte) (*bridge, error) {
	sl, err := newSealer(key, replica)
	if err != nil {
		return nil, err
	}
	o := g.opts
	return &bridge{g: g, seal: sl, ttl: o.InputTTL, maxAll: o.MaxParked, maxPer: o.MaxParkedPerAgent,
		calls: map[[16]byte]*bcall{}, open: map[string][]*bcall{}, parked: map[string]int{}, spent: map[[16]byte]spent{},
		ups: map[string]*upstreamUse{}, upsBy: map[string]int{}, tasks: map[string][]*followed{}, asking: map[string]int{}, legacy: map[[2]string]int{}, solo: map[string]int{},
		work: make(chan func()), quit: make(chan struct{})}, nil
}

// bcall is one bridged call: the upstream call runs in its own
// goroutine, outliving the attempt that started it while it waits for
// the agent's input.
type bcall struct {
	br     *bridge
	id     [16]byte
	call   string // the logical call's id, as the audit log names it (attempt)
	agent  string
	server string
	bind   binding
	ctx    context.Context // the upstream call's
	cancel context.CancelFunc
	kick   chan struct{} // a question is in the inbox
	done   chan struct{}
	res    any
	err    error

	mu      sync.Mutex
	round   uint32
	handed  int // questions handed to the agent, all rounds
	parked  bool
	ended   bool
	timer   *time.Timer
	inbox   []*ask         // asked by the server, not yet taken (wait takes them)
	pending []*ask         // asked of the agent, unanswered, in order
	n       map[string]int // keys handed out per method
	early   mcp.InputResponses
	attempt context.Context // the current attempt's: progress and logs go on its stream
	up      *mcp.Peer       // the upstream connection's, once the server asked (more)
	meta    *mcp.RequestMeta
	tok     json.RawMessage // the current attempt's progress token (nil: it asked for none)
	// started closes when the call becomes a task (startAs; nil: it
	// cannot); detached is set then: the call is no attempt's any more.
	started  <-chan struct{}
	detached bool
	// hand, set only by benchFloor, takes done to the goroutine that
	// closes it (ran).
	hand chan<- chan struct{}
}

// ask is a server's request waiting for its answer.
type ask struct {
	key    string
	method string
	params json.RawMessage
	reply  chan answer // buffered: the answer never blocks
}

type answer struct {
	raw json.RawMessage
	err error
}

func openKey(agent, server string) string { return agent + "\x00" + server }

// ID is the call's id as the audit log and errors name it.
func (c *bcall) ID() string { return hex.EncodeToString(c.id[:]) }

// start runs fn as a bridged call and waits for its first outcome: the
// result, or the questions the server asked meanwhile (parked, answered
// input_required). early is the answers the request brought without a
// requestState (the gateway's early: take may use one, as a server
// request's answer, through the chain). at is the logical call this attempt is one of: a
// first attempt's gets the call's id; a retry's (a modern upstream's
// call) keeps its own, and the host reads on fn's context that it was
// decided (engine.Attempt).
func (br *bridge) start(ctx context.Context, s *session, server string, b binding, meta *mcp.RequestMeta, early mcp.InputResponses, at *attempt,
	params json.RawMessage, fn func(ctx, nctx context.Context) (any, error)) (any, error, *mcp.InputRequiredResult) {
	return br.startAs(ctx, s, server, b, meta, early, at, params, nil, fn)
}

// errStarted is what waiting for a call answers once it became a task
// (startAs's started): the call goes on, out of the bridge's rounds.
var errStarted = errors.New("the call became a task")

// startAs is start for a call that may become a task (tasks_modern.go):
// once started is closed, the wait answers errStarted, and the call
// goes on detached (its server's requests go to the task, not to the
// agent's retries) until fn returns.
func (br *bridge) startAs(ctx context.Context, s *session, server string, b binding, meta *mcp.RequestMeta, early mcp.InputResponses, at *attempt,
	params json.RawMessage, started <-chan struct{}, fn func(ctx, nctx context.Context) (any, error)) (any, error, *mcp.InputRequiredResult) {
	c := &bcall{br: br, agent: s.agent, server: server, bind: b, kick: make(chan struct{}, 1), done: make(chan struct{}),
		attempt: ctx, meta: meta, tok: progressToken(params), n: map[string]int{}, started: started, early: early}
	rand.Read(c.id[:])
	if at.id == ([16]byte{}) {
		at.id = c.id
	}
	c.call = at.callID()
	// The call outlives the attempt (it may wait for the retry), keeping
	// its values: the session, the request's _meta, the trace.
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	c.ctx = context.WithValue(engine.WithAttempt(engine.WithCallID(c.ctx, c.call), &at.Attempt), bcallKey{}, c)
	br.mu.Lock()
	k := openKey(c.agent, server)
	if err := br.use(k, c.agent, server); err != nil {
		br.mu.Unlock()
		c.cancel()
		return nil, err, nil
	}
	br.calls[c.id] = c
	br.open[k] = append(br.open[k], c)
	br.mu.Unlock()
	if benchFloor != nil {
		benchFloor(br, c)
	}
	br.run(func() {
		defer c.ran()
		c.res, c.err = fn(c.ctx, attemptCtx{c})
	})
	return c.wait(ctx)
}

// ran tells the call's waiter its outcome is in.
func (c *bcall) ran() {
	if c.hand != nil {
		c.hand <- c.done
		return
	}
	close(c.done)
}

// benchFloor is nil but in a build with the nexusbench tag (bench.go),
// which BenchmarkBridgeRoundGateway builds nexus with: there it makes
// the floor's calls do what any bridge pays beyond a plain call. A nil
// check is all it costs the calls measured beside them.
var benchFloor func(br *bridge, c *bcall)

// run runs f, a bridged call, on an idle runner, or on a new one. The
// call outlives the attempt that started it, so it cannot run on the
// request's goroutine; and a fresh goroutine running the whole host
// call grows its stack from the smallest, copying it each time
// (runtime.newstack, several times a call). A runner keeps its stack
// between calls, until the garbage collector shrinks an idle one.
func (br *bridge) run(f func()) {
	select {
	case br.work <- f:
	default:
		go br.runner(f)
	}
}

// runner runs f, then the calls run hands it, until none came for
// runnerIdle or the bridge closes.
func (br *bridge) runner(f func()) {
	t := time.NewTimer(runnerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(runnerIdle)
		select {
		case f = <-br.work:
		case <-t.C:
			return
		case <-br.quit:
			return
		}
	}
}

// bcallKey is the context key of the bridged call an upstream call
// runs for (bcallOf).
type bcallKey struct{}

// bcallOf is the bridged call whose upstream call ctx is (a log
// message's mcp.LogMessage.Call), or nil.
func bcallOf(ctx context.Context) *bcall {
	if ctx == nil {
		return nil
	}
	c, _ := ctx.Value(bcallKey{}).(*bcall)
	return c
}

// progressToken is the progress token a request's params ask with.
func progressToken(params json.RawMessage) json.RawMessage {
	if params == nil {
		return nil
	}
	return mcp.Member(scan(params).meta, "progressToken")
}

// progress sends a server's progress of the call to the agent, on the
// current attempt's stream with that attempt's token: a retry's
// progress is the retry's, and a call parked between attempts has no
// request to send it on (nor does an attempt that asked for none).
func (c *bcall) progress(pr mcp.Progress) {
	c.mu.Lock()
	tok, parked := c.tok, c.parked || c.detached
	c.mu.Unlock()
	if tok == nil || parked {
		return
	}
	pr.ProgressToken = tok
	c.notify(mcp.NotificationProgress, pr)
}

// log sends a server's log message of the call to the agent, as
// forwardLog does for a modern request: only if the current attempt
// asked for logs (its _meta logLevel), at that level, on its stream.
func (c *bcall) log(server string, m mcp.LogMessage) {
	c.mu.Lock()
	meta, parked := c.meta, c.parked || c.detached
	c.mu.Unlock()
	if parked || meta == nil || meta.LogLevel == "" || m.Level.Severity() < meta.LogLevel.Severity() {
		return
	}
	if m.Logger == "" {
		m.Logger = server
	} else {
		m.Logger = server + "/" + m.Logger
	}
	m.Call, m.Related = nil, false
	c.notify(mcp.NotificationMessage, m)
}

// notify sends a notification to the agent on the current attempt's
// stream: through the session that serves it, or, for an attempt
// another replica forwarded here, back to that replica over the bus
// (relay.go), which sends it on the agent's request.
func (c *bcall) notify(method string, params any) {
	c.mu.Lock()
	cur := c.attempt
	c.mu.Unlock()
	if r := relayedOf(cur); r != nil {
		r.note(method, params)
		return
	}
	s, ok := mcp.HandlerOf(cur).(*session)
	if !ok {
		return
	}
	if err := s.peer.Notify(cur, method, params); err != nil {
		c.br.g.log.Debug("a bridged call's notification was not sent", "method", method, "error", err)
	}
}

// attemptCtx is the context of a call's current attempt, for what goes
// to the agent on that attempt's stream (progress).
type attemptCtx struct{ c *bcall }

func (a attemptCtx) cur() context.Context {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	return a.c.attempt
}
func (a attemptCtx) Deadline() (time.Time, bool) { return a.cur().Deadline() }
func (a attemptCtx) Done() <-chan struct{}       { return a.cur().Done() }
func (a attemptCtx) Err() error                  { return a.cur().Err() }
func (a attemptCtx) Value(k any) any             { return a.cur().Value(k) }

// wait waits for the call's outcome, or for questions: those the agent
// cannot be asked are settled here (roots from the config, a refusal for
// an undeclared capability), the rest parked and handed to the agent.
func (c *bcall) wait(ctx context.Context) (any, error, *mcp.InputRequiredResult) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var gather <-chan time.Time
	var deadline, quiet time.Time
	solo := c.br.isSolo(c)
	// gathering reports whether the round's questions are still being
	// gathered, at most gatherMax: until none came for gatherQuiet (not
	// for a solo request), and while the upstream connection read more
	// requests than reached the bridge, looking again every gatherPoll
	// (on a loaded machine one may take a while to pass the chain).
	// Otherwise the round is due.
	gathering := func() bool {
		now := time.Now()
		if !now.Before(deadline) {
			return false
		}
		var d time.Duration
		if !solo && now.Before(quiet) {
			d = quiet.Sub(now)
		}
		if c.more() && (d == 0 || d > gatherPoll) {
			d = gatherPoll
		}
		if d == 0 {
			return false
		}
		d = min(d, deadline.Sub(now))
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		gather = timer.C
		return true
	}
	// asked starts or extends the gathering of a round's questions.
	asked := func() bool {
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(gatherMax)
		}
		quiet = now.Add(gatherQuiet)
		return gathering()
	}
	due := false
	if c.waiting() > 0 {
		// Questions the retry left unanswered: asked again (patterns/mrtr),
		// with any the server adds meanwhile.
		due = !asked()
	}
	for {
		if due {
			due = false
			select {
			case <-c.kick: // one more came meanwhile: taken first
				if err := c.takeInbox(); err != nil {
					return nil, err, nil
				}
				due = !asked()
				continue
			default:
			}
			select {
			case <-c.done:
				c.br.end(c)
				return c.res, c.err, nil
			default:
			}
			r, err := c.br.park(c)
			if err != nil {
				c.cancel()
				c.br.end(c)
				return nil, err, nil
			}
			return nil, nil, r
		}
		select {
		case <-c.done:
			c.br.end(c)
			return c.res, c.err, nil
		default:
		}
		select {
		case <-c.done:
			c.br.end(c)
			return c.res, c.err, nil
		case <-c.kick:
			if err := c.takeInbox(); err != nil {
				return nil, err, nil
			}
			if c.waiting() > 0 {
				due = !asked()
			}
		case <-gather:
			gather = nil
			due = !gathering()
		case <-c.started:
			// A task now: it goes on without the request, and what its
			// server asks goes to the task. The bridge forgets it once
			// it ends.
			c.mu.Lock()
			c.detached = true
			c.mu.Unlock()
			go func() {
				<-c.done
				c.br.end(c)
			}()
			return nil, errStarted, nil
		case <-ctx.Done():
			// The agent went away: nobody will retry.
			c.cancel()
			c.br.end(c)
			return nil, ctx.Err(), nil
		}
	}
}

// takeInbox takes the questions the server asked since: settled, or
// added to those for the agent. An error ends the call.
func (c *bcall) takeInbox() error {
	c.mu.Lock()
	inbox := c.inbox
	c.inbox = nil
	c.mu.Unlock()
	for _, a := range inbox {
		if err := c.take(a); err != nil {
			c.cancel()
			c.br.end(c)
			return err
		}
	}
	return nil
}

// soloKey names what a call asks for, for the bridge's count of its
// rounds: its server, method and target (a tool's name, a uri).
func (c *bcall) soloKey() string {
	return c.server + "\x00" + c.bind.method + "\x00" + c.bind.target
}

// isSolo reports whether c's request is solo: its last soloAfter calls
// asked the agent one question each, in one round. Its round is
// then handed out as soon as nothing more is in sight (bcall.more), not
// after gatherQuiet: a server that asks one question at a time does not
// keep the agent's request (and the gateway's threads) waiting for
// more. A request not yet known gathers as long as any.
func (br *bridge) isSolo(c *bcall) bool {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.solo[c.soloKey()] >= soloAfter
}

// learn counts an ended call that handed the agent n questions: one
// more call of one question, or (several, at once or one after another:
// a question that missed its round looks like the second) no longer
// solo.
func (br *bridge) learn(c *bcall, n int) {
	k := c.soloKey()
	br.mu.Lock()
	defer br.mu.Unlock()
	v, ok := br.solo[k]
	switch {
	case n > 1:
		if ok {
			br.solo[k] = 0
		}
	case v >= soloAfter:
	case ok || len(br.solo) < maxSolo:
		br.solo[k] = v + 1
	}
}

// late forgets that c's request is solo: a question came after its
// round was handed out (it goes to the next round), so its server may
// ask several at once; its rounds are gathered for gatherQuiet again.
func (br *bridge) late(c *bcall) {
	k := c.soloKey()
	br.mu.Lock()
	defer br.mu.Unlock()
	if _, ok := br.solo[k]; ok {
		br.solo[k] = 0
	}
}

// more reports whether more of the server's requests may be on their way
// to the call: its upstream connection read more that are unanswered
// than are inside ask (the others are still being decoded, or pass the
// chain). Not known yet (no question came over it): more.
func (c *bcall) more() bool {
	c.mu.Lock()
	up := c.up
	c.mu.Unlock()
	if up == nil {
		return true
	}
	c.br.mu.Lock()
	n := c.br.asking[openKey(c.agent, c.server)]
	c.br.mu.Unlock()
	return up.Incoming() > n
}
func (c *bcall) waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// take settles a server's question or adds it to those for the agent.
// An error ends the call: the agent gets it.
func (c *bcall) take(a *ask) error {
	c.mu.Lock()
	meta, early := c.meta, c.early
	c.mu.Unlock()
	caps := mcp.ClientCapabilities{}
	if meta != nil {
		caps = meta.Capabilities
	}
	if a.method == mcp.MethodRootsList && caps.Roots == nil {
		// The agent's configured roots: the gateway knows them.
		a.reply <- answer{raw: c.br.g.rootsOf(c.agent)}
		return nil
	}
	if err := declared(caps, mcp.InputRequest{Method: a.method, Params: a.params}); err != nil {
		a.reply <- answer{err: &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: "the client's request did not declare " + a.method}}
		return err
	}
	if raw, ok := early[a.key]; ok {
		// An answer the request brought before it was asked: the
		// question passed the chain's request half before it reached
		// the bridge (the host guards the connection's handlers), and
		// this answer passes its response half on the way back, audited
		// under the call, as a retry's answer does; a refused one never
		// reaches the server.
		if checkAnswer(a.method, raw) == nil {
			a.reply <- answer{raw: raw}
			return nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) >= maxAsksPerCall {
		a.reply <- answer{err: &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf("the client has %d requests of this call to answer already", maxAsksPerCall)}}
		return &mcp.RPCError{Code: mcp.CodeInternalError, Message: fmt.Sprintf("server %q asked more than %d questions in one call; the call was ended", c.server, maxAsksPerCall)}
	}
	c.pending = append(c.pending, a)
	return nil
}

// checkAnswer reports whether raw is a result of method.
func checkAnswer(method string, raw json.RawMessage) error {
	var err error
	switch method {
	case mcp.MethodSamplingCreateMessage:
		var r mcp.CreateMessageResult
		if err = json.Unmarshal(raw, &r); err == nil && r.Role == "" {
			err = errors.New("it has no role")
		}
	case mcp.MethodElicitationCreate:
		err = checkElicitResult(raw)
	case mcp.MethodRootsList:
		var r mcp.ListRootsResult
		if err = json.Unmarshal(raw, &r); err == nil && r.Roots == nil {
			err = errors.New("it has no roots")
		}
	}
	return err
}

// checkElicitResult is checkAnswer for an elicitation's result, in one
// validating pass and no decoding (the answer goes on as it came): an
// object with an action, a string not empty; content and _meta, if
// there, objects.
func checkElicitResult(raw json.RawMessage) error {
	i := wire.SkipWS(raw, 0)
	if i == len(raw) || raw[i] != '{' {
		return errors.New("it is not an object")
	}
	action := ""
	err := wire.Members(raw[i:], func(k, v []byte) error {
		switch {
		case wire.KeyIs(k, "action"):
			s, err := wire.Unquote(v)
			if err != nil {
				return errors.New("its action is not a string")
			}
			action = s
		case wire.KeyIs(k, "content"), wire.KeyIs(k, "_meta"):
			if v[0] != '{' && string(v) != "null" {
				return fmt.Errorf("its %s is not an object", k[1:len(k)-1])
			}
		}
		return nil
	})
	if err == nil && action == "" {
		err = errors.New("it has no action")
	}
	return err
}

// park hands the call's pending questions to the agent, sealing the
// state its retry must bring back.
func (br *bridge) park(c *bcall) (*mcp.InputRequiredResult, error) {
	br.mu.Lock()
	if br.nPark >= br.maxAll || br.parked[c.agent] >= br.maxPer {
		all, per := br.nPark, br.parked[c.agent]
		br.mu.Unlock()
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Data: json.RawMessage(`{"retryable":true}`), Message: fmt.Sprintf(
			"server %q asks the client for input, and this gateway already holds %d calls waiting for input (%d of agent %q; limits %d and %d per agent): the call was ended; retry later, or answer or drop the calls that wait",
			c.server, all, per, c.agent, br.maxAll, br.maxPer)}
	}
	br.nPark++
	br.parked[c.agent]++
	br.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.round++
	c.handed += len(c.pending)
	c.parked = true
	exp := time.Now().Add(br.ttl)
	c.timer = time.AfterFunc(br.ttl, func() { br.expire(c) })
	out := &mcp.InputRequiredResult{ResultType: mcp.ResultInputRequired, InputRequests: make(mcp.InputRequests, len(c.pending))}
	for _, a := range c.pending {
		out.InputRequests[a.key] = mcp.InputRequest{Method: a.method, Params: a.params}
	}
	out.RequestState = br.seal.seal(&state{call: c.id, round: c.round, replica: br.seal.replica, expires: exp.Unix() + 1, agent: c.agent, bind: c.bind})
	return out, nil
}

// unpark takes a parked call out of the counts. Called with c.mu held.
func (br *bridge) unpark(c *bcall) {
	if !c.parked {
		return
	}
	c.parked = false
	if c.timer != nil {
		c.timer.Stop()
	}
	br.mu.Lock()
	br.nPark--
	if br.parked[c.agent]--; br.parked[c.agent] <= 0 {
		delete(br.parked, c.agent)
	}
	br.mu.Unlock()
}

// expire ends a call whose retry did not come in time: the upstream
// call is cancelled. It is ended before that, at once with the check
// that it is parked: a retry then finds it expired, never half-ended.
func (br *bridge) expire(c *bcall) {
	c.mu.Lock()
	if !c.parked || c.ended {
		c.mu.Unlock()
		return
	}
	pending := br.markEnded(c)
	c.mu.Unlock()
	br.finish(c, pending, "has expired (the call waited longer than the gateway's input_ttl for its input and was ended)")
	br.g.log.Debug("a call waiting for the client's input expired; cancelled upstream", "agent", c.agent, "server", c.server, "call", c.ID())
	c.cancel()
}

// end forgets a call, remembering its id so a replay of its state is
// told as one; pending questions are answered as outside any call.
func (br *bridge) end(c *bcall) { br.endWhy(c, "was used already (each is good for one retry)") }

// endWhy is end, saying why for a state of the call that comes back.
func (br *bridge) endWhy(c *bcall, why string) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	pending := br.markEnded(c)
	c.mu.Unlock()
	br.finish(c, pending, why)
}

// markEnded marks c ended and returns its unanswered questions. Called
// with c.mu held.
func (br *bridge) markEnded(c *bcall) []*ask {
	c.ended = true
	br.unpark(c)
	pending := append(c.pending, c.inbox...)
	c.pending, c.inbox = nil, nil
	return pending
}

// finish is the rest of ending a call: its questions are outside any
// call now, and it leaves the bridge's books.
func (br *bridge) finish(c *bcall, pending []*ask, why string) {
	c.mu.Lock()
	n := c.handed
	c.mu.Unlock()
	if n > 0 {
		br.learn(c, n)
	}
	for _, a := range pending {
		raw, err := br.outside(c.agent, c.server, a.method)
		a.reply <- answer{raw: raw, err: err}
	}
	now := time.Now().Unix()
	br.mu.Lock()
	delete(br.calls, c.id)
	k := openKey(c.agent, c.server)
	list := br.open[k]
	for i, x := range list {
		if x == c {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(br.open, k)
	} else {
		br.open[k] = list
	}
	br.unuse(k)
	if len(br.spent) >= maxSpent {
		for id, sp := range br.spent {
			if sp.until < now || len(br.spent) >= maxSpent {
				delete(br.spent, id)
			}
		}
	}
	br.spent[c.id] = spent{until: now + int64(br.ttl/time.Second) + 1, why: why}
	br.mu.Unlock()
}

// resume serves a retry that brings a requestState the bridge sealed,
// st as bridged opened and checked it (its agent, its request, expiry):
// every check passes before anything reaches the server (bad state, a
// replay, another agent's or another request's state, answers to
// questions never asked: the spec's invalid params); then the answers go
// to the server's waiting requests and the call goes on.
func (br *bridge) resume(ctx context.Context, st *state, meta *mcp.RequestMeta, in *mcp.InputParams, method string, params json.RawMessage) (any, error, *mcp.InputRequiredResult) {
	if st.replica != br.seal.replica {
		br.mu.Lock()
		fwd := br.forward
		br.mu.Unlock()
		if fwd != nil {
			return fwd(ctx, st, in, params)
		}
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Data: json.RawMessage(`{"retryable":true}`), Message: fmt.Sprintf(
			"this call waits for its input on another gateway replica (%x), which this one cannot reach; retry the request (the same requestState may reach that replica), or send it again without inputResponses and requestState to start over", st.replica)}, nil
	}
	br.mu.Lock()
	c := br.calls[st.call]
	sp, ended := br.spent[st.call]
	br.mu.Unlock()
	if c == nil {
		if ended {
			return nil, badState(sp.why), nil
		}
		return nil, badState("names a call this gateway no longer holds (it ended, or the gateway restarted)"), nil
	}
	c.mu.Lock()
	if !c.parked || c.round != st.round {
		c.mu.Unlock()
		return nil, badState("was used already (each is good for one retry)"), nil
	}
	asked := make(map[string]*ask, len(c.pending))
	for _, a := range c.pending {
		asked[a.key] = a
	}
	for k, raw := range in.InputResponses {
		a := asked[k]
		if a == nil {
			c.mu.Unlock()
			return nil, mcp.InvalidParams("inputResponses[%q] answers an input request this call never asked (it asked %s); send the answers under the keys of the last inputRequests", k, keyList(c.pending)), nil
		}
		if err := checkAnswer(a.method, raw); err != nil {
			c.mu.Unlock()
			return nil, mcp.InvalidParams("inputResponses[%q] is not a %s result: %v", k, a.method, err), nil
		}
	}
	// Good: the state is spent, the answers go upstream.
	br.unpark(c)
	c.attempt, c.meta, c.tok = ctx, meta, progressToken(params)
	rest := c.pending[:0]
	for _, a := range c.pending {
		if raw, ok := in.InputResponses[a.key]; ok {
			a.reply <- answer{raw: raw}
		} else {
			rest = append(rest, a)
		}
	}
	c.pending = rest
	c.mu.Unlock()
	return c.wait(ctx)
}

func keyList(asks []*ask) string {
	keys := make([]string, len(asks))
	for i, a := range asks {
		keys[i] = fmt.Sprintf("%q", a.key)
	}
	return strings.Join(keys, ", ")
}

// use counts a call on agent's connection to server, keeping it open:
// a connection not yet in use past the bounds is refused. Called with
// br.mu held.
func (br *bridge) use(k, agent, server string) error {
	if server == "" {
		return nil // no such tool: the call says so
	}
	u := br.ups[k]
	if u == nil {
		o := br.g.opts
		if len(br.ups) >= o.MaxUpstreams || br.upsBy[agent] >= o.MaxUpstreamsPerAgent {
			return &mcp.RPCError{Code: mcp.CodeInternalError, Data: json.RawMessage(`{"retryable":true}`), Message: fmt.Sprintf(
				"server %q: the gateway keeps %d upstream connections for modern requests (%d of agent %q), at its limits of %d and %d per agent; retry once one has been idle for %s, or raise the limits (gateway options MaxUpstreams, MaxUpstreamsPerAgent)",
				server, len(br.ups), br.upsBy[agent], agent, o.MaxUpstreams, o.MaxUpstreamsPerAgent, o.UpstreamIdle)}
		}
		u = &upstreamUse{agent: agent, server: server}
		br.ups[k] = u
		br.upsBy[agent]++
	}
	u.open++
	if u.idle != nil {
		u.idle.Stop()
		u.idle = nil
	}
	return nil
}

// unuse ends a call's use of its connection; the last one starts its
// idle time. Called with br.mu held.
func (br *bridge) unuse(k string) {
	u := br.ups[k]
	if u == nil {
		return
	}
	if u.open--; u.open > 0 {
		return
	}
	u.idle = time.AfterFunc(br.g.opts.UpstreamIdle, func() { br.idleEnd(k, u) })
}

// idleEnd ends a connection no modern call used for the idle time,
// unless a legacy session of the agent is using it (a call in flight, a
// subscription) or a subscriptions/listen stream watches it: then it
// stays, and is looked at again after another idle time.
func (br *bridge) idleEnd(k string, u *upstreamUse) {
	br.mu.Lock()
	if br.ups[k] != u || u.open > 0 {
		br.mu.Unlock()
		return
	}
	if br.g.usedBySessions(u.agent, u.server) {
		u.idle = time.AfterFunc(br.g.opts.UpstreamIdle, func() { br.idleEnd(k, u) })
		br.mu.Unlock()
		return
	}
	delete(br.ups, k)
	if br.upsBy[u.agent]--; br.upsBy[u.agent] <= 0 {
		delete(br.upsBy, u.agent)
	}
	br.mu.Unlock()
	br.g.mu.Lock()
	up := br.g.agents[u.agent]
	br.g.mu.Unlock()
	if up != nil {
		br.g.log.Debug("an idle upstream connection of modern requests ends", "agent", u.agent, "server", u.server)
		up.Disconnect(u.server)
	}
}

// close ends every bridged call (the gateway closes), and the relay
// first: no retry comes in from the other replicas meanwhile.
func (br *bridge) close() {
	br.quitOnce.Do(func() { close(br.quit) })
	br.mu.Lock()
	r := br.relay
	br.forward = nil
	br.mu.Unlock()
	if r != nil {
		r.close()
	}
	br.mu.Lock()
	list := make([]*bcall, 0, len(br.calls))
	for _, c := range br.calls {
		list = append(list, c)
	}
	br.mu.Unlock()
	// What the servers wait for is refused first, and the calls that
	// waited get closeDrain to end with it, before they are cancelled
	// and their connections closed: cancelled first, a server's request
	// could get the cancellation instead, and a refusal written after
	// the close never reaches the server, which then waits out its own
	// timeout for an answer.
	var asked []*bcall
	for _, c := range list {
		c.mu.Lock()
		waits := len(c.pending)+len(c.inbox) > 0
		c.mu.Unlock()
		br.endWhy(c, "names a call the gateway ended as it shut down")
		if waits {
			asked = append(asked, c)
		}
	}
	if len(asked) > 0 {
		t := time.NewTimer(closeDrain)
	drain:
		for _, c := range asked {
			select {
			case <-c.done:
			case <-t.C:
				br.g.log.Debug("calls refused at shutdown did not end in time; cancelled", "after", closeDrain)
				break drain
			}
		}
		t.Stop()
	}
	for _, c := range list {
		c.cancel()
	}
	br.mu.Lock()
	for _, u := range br.ups {
		if u.idle != nil {
			u.idle.Stop()
		}
	}
	br.mu.Unlock()
}

// ---- the server's side --------------------------------------------------------

// owner is whom a server's request on agent's shared connection to
// server belongs to (ctx is the request's handler context, meta its
// _meta): a bridged call c, a followed task f, or neither (outside any
// modern call: a legacy session's call, or none).
//
// When the transport says which call of the connection the request came
// with (mcp.CallOf: over streamable HTTP, a request on a call's response
// stream), that call decides: the bridged call whose upstream call it is
// (bcallOf, its task once it became one), else no bridged call's.
// Otherwise (stdio, or the standalone stream) it goes by who waits on
// the server (callFor); but if a legacy session's call is in flight
// there too, the request may be that call's: ambiguous, it is nobody's.
func (br *bridge) owner(ctx context.Context, agent, server string, meta mcp.Meta) (c *bcall, f *followed, ambiguous bool) {
	if call, related := mcp.CallOf(ctx); related {
		c = bcallOf(call)
		if c == nil || c.br != br || c.agent != agent || c.server != server {
			return nil, nil, false
		}
		c.mu.Lock()
		d := c.detached
		c.mu.Unlock()
		if d {
			return nil, br.taskFor(agent, server, c, meta), false
		}
		return c, nil, false
	}
	c, legacy := br.callFor(agent, server)
	if c == nil {
		f = br.taskFor(agent, server, nil, meta)
	}
	if legacy > 0 && (c != nil || f != nil) {
		return nil, nil, true
	}
	return c, f, false
}

// callFor is the bridged call a server's request on agent's connection
// belongs to when the transport does not say: the agent's newest
// bridged call to server that is running, else its newest parked one
// (a question that came after its round was handed out: it is asked in
// the next); nil while none is in flight (or only calls that became
// tasks). legacy is the legacy sessions' calls in flight there.
func (br *bridge) callFor(agent, server string) (c *bcall, legacy int) {
	br.mu.Lock()
	list := slices.Clone(br.open[openKey(agent, server)])
	legacy = br.legacy[[2]string{agent, server}]
	br.mu.Unlock()
	var parked *bcall
	for i := len(list) - 1; i >= 0; i-- {
		c := list[i]
		c.mu.Lock()
		p, d := c.parked, c.detached
		c.mu.Unlock()
		switch {
		case d:
		case !p:
			return c, legacy
		case parked == nil:
			parked = c
		}
	}
	return parked, legacy
}

// legacyCall counts (d 1) or uncounts (d -1) a legacy session's call in
// flight on agent's shared connection to server: over a transport that
// does not say which call a server's request came with, a request then
// cannot be told from that call's (owner).
func (br *bridge) legacyCall(agent, server string, d int) {
	k := [2]string{agent, server}
	br.mu.Lock()
	if br.legacy[k] += d; br.legacy[k] <= 0 {
		delete(br.legacy, k)
	}
	br.mu.Unlock()
}

// running is agent's bridged calls to server, parked or not, but not
// those that became tasks (what they send has no request to go to).
func (br *bridge) running(agent, server string) []*bcall {
	br.mu.Lock()
	list := slices.Clone(br.open[openKey(agent, server)])
	br.mu.Unlock()
	return slices.DeleteFunc(list, func(c *bcall) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.detached
	})
}

// follow registers a modern agent's task that follows server's
// 2025-11-25 task (tasks_modern.go), for what that server asks during
// it; unfollow forgets it.
func (br *bridge) follow(agent, server string, f *followed) {
	br.mu.Lock()
	defer br.mu.Unlock()
	k := openKey(agent, server)
	br.tasks[k] = append(br.tasks[k], f)
}

func (br *bridge) unfollow(agent, server string, f *followed) {
	br.mu.Lock()
	defer br.mu.Unlock()
	k := openKey(agent, server)
	list := slices.DeleteFunc(br.tasks[k], func(x *followed) bool { return x == f })
	if len(list) == 0 {
		delete(br.tasks, k)
	} else {
		br.tasks[k] = list
	}
}

// taskFor is the followed task a server's request belongs to: the one
// its _meta names (io.modelcontextprotocol/related-task), else the
// agent's newest task of that server; of call's tasks only, if call is
// set (the request came with that call's upstream call).
func (br *bridge) taskFor(agent, server string, call *bcall, meta mcp.Meta) *followed {
	var rel struct {
		TaskID string `json:"taskId"`
	}
	if raw, ok := meta[relatedTaskKey]; ok {
		json.Unmarshal(raw, &rel)
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	list := br.tasks[openKey(agent, server)]
	for i := len(list) - 1; i >= 0; i-- {
		if (rel.TaskID == "" || list[i].upstream == rel.TaskID) && (call == nil || list[i].c == call) {
			return list[i]
		}
	}
	return nil
}

// ask is a legacy server's request to the client on agent's shared
// connection: it goes to the call it belongs to (or the task) and waits
// for the agent's answer.
func (br *bridge) ask(ctx context.Context, agent, server, method string, params json.RawMessage, meta mcp.Meta) (json.RawMessage, error) {
	// Counted while inside: a call gathering its round's questions
	// compares this with what the connection read (bcall.more).
	k := openKey(agent, server)
	br.mu.Lock()
	br.asking[k]++
	br.mu.Unlock()
	defer func() {
		br.mu.Lock()
		if br.asking[k]--; br.asking[k] <= 0 {
			delete(br.asking, k)
		}
		br.mu.Unlock()
	}()
	c, f, ambiguous := br.owner(ctx, agent, server, meta)
	if ambiguous {
		return br.ambiguous(agent, server, method)
	}
	if c == nil {
		if f != nil {
			if method == mcp.MethodRootsList && f.meta.Capabilities.Roots == nil {
				return br.g.rootsOf(agent), nil // the gateway knows them
			}
			return f.ask(ctx, method, params, meta)
		}
		engine.SetCall(ctx, cameWith(ctx))
		return br.outside(agent, server, method)
	}
	engine.SetCall(ctx, c.ctx) // the audit record of this request names the call and its session
	a := &ask{method: method, params: params, reply: make(chan answer, 1)}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return br.outside(agent, server, method)
	}
	if c.parked && method == mcp.MethodRootsList && (c.meta == nil || c.meta.Capabilities.Roots == nil) {
		// Nothing to wait for: the gateway knows them (take).
		c.mu.Unlock()
		return br.g.rootsOf(agent), nil
	}
	if up := mcp.PeerOf(ctx); up != nil {
		c.up = up
	}
	if c.parked {
		br.late(c)
	}
	a.key = c.keyFor(method, meta)
	c.inbox = append(c.inbox, a)
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default: // wait has been told already
	}
	select {
	case r := <-a.reply:
		return r.raw, r.err
	case <-c.ctx.Done():
		return nil, c.ctx.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// outside answers a server's request no call can take: roots/list with
// the agent's configured roots, anything else refused, saying why. A
// legacy session's call (on the shared connection: its client declared
// no sampling, elicitation or roots) takes none.
func (br *bridge) outside(agent, server, method string) (json.RawMessage, error) {
	if method == mcp.MethodRootsList {
		return br.g.rootsOf(agent), nil
	}
	return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: fmt.Sprintf(
		"%s refused: no call of agent %q to server %q is waiting that could answer it (the gateway passes it on only during a call of an MCP 2026-07-28 client that declared it, or on a session whose client declared it)", method, agent, server)}
}

// ambiguous answers a server's request that owner could not tie to one
// call: roots/list as outside any call (the agent's configured roots:
// what either call would get unless the modern one declared roots, and
// nothing reaches a person), sampling and elicitation refused, saying
// why and what to change, and logged.
func (br *bridge) ambiguous(agent, server, method string) (json.RawMessage, error) {
	if method == mcp.MethodRootsList {
		br.g.log.Debug("a server's roots/list on a shared connection could not be tied to one call; answered with the agent's configured roots", "agent", agent, "server", server)
		return br.g.rootsOf(agent), nil
	}
	capability := strings.SplitN(method, "/", 2)[0]
	br.g.log.Warn("a server's request on a shared connection could not be tied to one call: refused", "agent", agent, "server", server, "method", method,
		"fix", "give the legacy client the "+capability+" capability (it then gets connections of its own), or connect to the server over streamable HTTP")
	return nil, &mcp.RPCError{Code: mcp.CodeInvalidRequest, Message: fmt.Sprintf(
		"%s refused: server %q asked it on agent %q's shared connection while both an MCP 2026-07-28 client's call and a call of a session whose client declared no %s were in flight there, and the connection does not say which call a server's request belongs to (stdio never does), so the gateway passes it to neither; "+
			"give the legacy client the %s capability (its sessions then get connections of their own, within the gateway's max_upstream_sessions_per_agent), or reach the server over streamable HTTP, whose requests come on their call's stream", method, server, agent, capability, capability)}
}

// cameWith is the call a server's request came with (mcp.CallOf), for
// its audit record when it is no bridged call's (owner: a legacy
// session's call, on the shared connection): that call's session; nil
// if the transport did not say.
func cameWith(ctx context.Context) context.Context {
	call, _ := mcp.CallOf(ctx)
	return call
}

// keyFor names a question: the server's own name for it
// (mcp.MetaInputKey in its _meta: a legacy request has no key), else
// "<method>-<n>" (sampling.createMessage-0). A key the call handed out already gets a suffix.
// Called with c.mu held.
func (c *bcall) keyFor(method string, meta mcp.Meta) string {
	key := ""
	if raw, ok := meta[mcp.MetaInputKey]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" && len(s) <= 128 {
			key = s
		}
	}
	if key == "" {
		key = fmt.Sprintf("%s-%d", strings.ReplaceAll(method, "/", "."), c.n[method])
		c.n[method]++
	}
	for _, a := range slices.Concat(c.pending, c.inbox) {
		if a.key == key {
			c.n[key]++
			return fmt.Sprintf("%s-%d", key, c.n[key])
		}
	}
	return key
}

// rootsOf is agent's configured roots as a roots/list result: the agent
// block's roots, else the config's.
func (g *Gateway) rootsOf(agent string) json.RawMessage {
	cfg := g.h.Config()
	var paths []string
	if a := cfg.Agent(agent); a != nil && len(a.Roots) > 0 {
		paths = a.Roots
	} else {
		paths = cfg.Roots
	}
	roots := make([]mcp.Root, 0, len(paths))
	for _, p := range paths {
		roots = append(roots, rootOf(p))
	}
	raw, _ := json.Marshal(mcp.ListRootsResult{Roots: roots})
	return raw
}

// rootOf is a configured root: a URI as it is, a path as a file URI.
func rootOf(p string) mcp.Root {
	if strings.Contains(p, "://") {
		return mcp.Root{URI: p}
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(p)}
	return mcp.Root{URI: u.String(), Name: filepath.Base(p)}
}

// bridgeOptions are the handlers of an agent's shared connections: what
// a legacy server asks goes to the agent's bridged call (bridge.ask).
func (g *Gateway) bridgeOptions(agent string, o engine.SessionOptions) engine.SessionOptions {
	br := g.br
	// A request the chain refuses never reaches ask: its audit record
	// names the call (and its session) all the same. The shared
	// connection is no one session's: without this its records would
	// name none.
	o.CallOf = func(ctx context.Context, server string) context.Context {
		c, f, ambiguous := br.owner(ctx, agent, server, nil)
		switch {
		case ambiguous:
			return nil
		case c != nil:
			return c.ctx
		case f != nil:
			return f.c.ctx
		}
		return cameWith(ctx)
	}
	o.RootsFor = func(server string) mcp.RootsHandler {
		return func(ctx context.Context) ([]mcp.Root, error) {
			raw, err := br.ask(ctx, agent, server, mcp.MethodRootsList, json.RawMessage(`{}`), nil)
			if err != nil {
				return nil, err
			}
			var r mcp.ListRootsResult
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, err
			}
			return r.Roots, nil
		}
	}
	o.Sampling = func(server string) mcp.SamplingHandler {
		return func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			raw, err := askTyped(ctx, br, agent, server, mcp.MethodSamplingCreateMessage, p, p.Meta)
			if err != nil {
				return nil, err
			}
			var r mcp.CreateMessageResult
			return &r, json.Unmarshal(raw, &r)
		}
	}
	o.Elicitation = func(server string) mcp.ElicitationHandler {
		return func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			raw, err := askTyped(ctx, br, agent, server, mcp.MethodElicitationCreate, p, p.Meta)
			if err != nil {
				return nil, err
			}
			var r mcp.ElicitResult
			return &r, json.Unmarshal(raw, &r)
		}
	}
	// What the bridge passes on goes as it came: only its _meta is read
	// (the question's key, the task it belongs to); the agent's answer,
	// checked once by the bridge (checkAnswer), goes back as it is.
	o.Raw = func(server string) mcp.RawHandler {
		return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			var meta mcp.Meta
			if raw := scan(params).meta; raw != nil {
				if err := json.Unmarshal(raw, &meta); err != nil {
					return nil, mcp.InvalidParams("%s: _meta: %v", method, err)
				}
			}
			return br.ask(ctx, agent, server, method, params, meta)
		}
	}
	return o
}

func askTyped(ctx context.Context, br *bridge, agent, server, method string, p any, meta mcp.Meta) (json.RawMessage, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return br.ask(ctx, agent, server, method, raw, meta)
}
