package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/internal/ctxval"
	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Link is one step of the chain: a built-in check, a WASM filter or a
// plugin. Policies get request events, sanitizers response events. A link
// reads the event's Params and Result and never writes into them: they
// may share memory with the message being passed on (a call's arguments
// are the agent's own bytes); a change is a Modify decision with bytes of
// its own.
type Link interface {
	Name() string
	Handle(ctx context.Context, e *event.Event) (event.Decision, error)
}

// Kind says which phase a link acts on.
type Kind int

const (
	KindPolicy    Kind = iota // request phase: allow, deny or modify params
	KindSanitizer             // response phase: allow, deny or modify the result
)

func (k Kind) String() string {
	if k == KindSanitizer {
		return "sanitizer"
	}
	return "policy"
}

// What a link's failure (an error, a trap, a timeout, an invalid decision)
// does. The defaults fail closed.
const (
	OnErrorDeny  = "deny"  // policy default: the request is denied
	OnErrorAllow = "allow" // policy: the request goes on as if allowed
	OnErrorError = "error" // sanitizer default: the result is withheld, the call fails
	OnErrorPass  = "pass"  // sanitizer: the result passes unchanged
)

// Match selects the events a link sees: each list holds globs (path.Match
// syntax); an empty list matches everything.
type Match struct {
	Servers []string
	Tools   []string
	Methods []string
}

func (m Match) matches(e *event.Event) bool {
	tool := ""
	if e.Tool != nil {
		tool = e.Tool.Name
	}
	return anyGlob(m.Servers, e.Server.Name) && anyGlob(m.Tools, tool) && anyGlob(m.Methods, e.Method)
}

func anyGlob(globs []string, s string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// Entry is a link with its place in the chain.
type Entry struct {
	Link    Link
	Kind    Kind
	Match   []Match // the link sees an event if any Match selects it; none selects all
	OnError string  // "" means the kind's fail-closed default
	// Shadow records what the link decides without enforcing it: a deny
	// is a would-deny, a modify a would-modify, a failure an error that
	// stops nothing. How a new policy is rolled out.
	Shadow bool
	// Source is where the link is defined, file:line, for traces.
	Source string
}

func (en Entry) selects(e *event.Event) bool {
	if len(en.Match) == 0 {
		return true
	}
	for _, m := range en.Match {
		if m.matches(e) {
			return true
		}
	}
	return false
}

// Chain runs links in config order.
type Chain struct {
	entries []Entry
}

// NewChain makes a chain; entries run in the order given.
func NewChain(entries ...Entry) *Chain { return &Chain{entries: entries} }

// Len is the number of links.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// Selects reports whether a link of kind k sees e: when none does, the
// caller need not encode what only such a link would read.
func (c *Chain) Selects(k Kind, e *event.Event) bool {
	if c == nil {
		return false
	}
	for _, en := range c.entries {
		if en.Kind == k && en.selects(e) {
			return true
		}
	}
	return false
}

// DeniedError is a request or response stopped by a link.
type DeniedError struct {
	Link   string
	Kind   Kind
	Reason string
	Method string
	Server string
	Tool   string
	// Err is set when the link failed and failed closed.
	Err error
	// Flags are the link's findings behind a withheld tools/list tool.
	Flags []string
}

func (e *DeniedError) Error() string {
	what := e.Method
	if e.Tool != "" {
		what = e.Server + "." + e.Tool
	} else if e.Server != "" {
		what = e.Method + " on " + e.Server
	}
	if e.Err != nil {
		return fmt.Sprintf("%s denied: %s %q failed and fails closed: %v", what, e.Kind, e.Link, e.Err)
	}
	reason := e.Reason
	if reason == "" {
		reason = "no reason given"
	}
	return fmt.Sprintf("%s denied by %s %q: %s", what, e.Kind, e.Link, reason)
}

func (e *DeniedError) Unwrap() error { return e.Err }

// WithheldError is a result a sanitizer failed on: it is not returned,
// because passing unsanitized output would defeat the sanitizer.
type WithheldError struct {
	Link string
	Err  error
}

func (e *WithheldError) Error() string {
	return fmt.Sprintf("result withheld: sanitizer %q failed: %v (set on_error = \"allow\" on the filter to let results through when it fails)", e.Link, e.Err)
}

func (e *WithheldError) Unwrap() error { return e.Err }

// Request runs the policies for a request event and returns the params to
// send (changed by any modify decisions), or a *DeniedError.
func (c *Chain) Request(ctx context.Context, e *event.Event) (json.RawMessage, error) {
	return c.request(ctx, e, nil, nil)
}

// Flag is a finding a link reported about the definition of a tool in a
// tools/list event (see event.Decision.Flags).
type Flag struct {
	Link string // the filter or plugin
	Text string
}

func (f Flag) String() string { return f.Link + ": " + f.Text }

// List runs the policies for the tools/list event of one tool: nil when
// the agent may see it, or the *DeniedError that withholds it; and the
// flags links reported on the way, from allow and deny decisions alike.
//
// accepted, if not nil, says whether a person accepted a link's findings
// for this very definition (nexus lock --accept-flagged): a deny that
// carries only accepted findings counts as a warning, and the links after
// it still decide.
func (c *Chain) List(ctx context.Context, e *event.Event, accepted func(link string, flags []string) bool) ([]Flag, error) {
	var flags []Flag
	_, err := c.request(ctx, e, &flags, accepted)
	return flags, err
}

func (c *Chain) request(ctx context.Context, e *event.Event, flags *[]Flag, accepted func(link string, flags []string) bool) (json.RawMessage, error) {
	e.Phase = event.PhaseRequest
	if c == nil {
		return e.Params, nil
	}
	tr := TraceFrom(ctx)
	for _, en := range c.entries {
		if en.Kind != KindPolicy || !en.selects(e) {
			continue
		}
		d, start, err := c.timed(ctx, en, e, tr)
		if err != nil {
			tr.add(en, e.Method, ActionError, err.Error(), nil, start)
			if en.OnError == OnErrorAllow || en.Shadow {
				continue
			}
			return nil, c.denied(en, e, "", err)
		}
		if flags != nil {
			for _, f := range d.Flags {
				*flags = append(*flags, Flag{Link: en.Link.Name(), Text: f})
			}
		}
		tr.add(en, e.Method, d.Action, d.Reason, d.Flags, start)
		if en.Shadow {
			continue
		}
		switch d.Action {
		case event.Deny:
			if accepted != nil && len(d.Flags) > 0 && accepted(en.Link.Name(), d.Flags) {
				continue
			}
			de := c.denied(en, e, d.Reason, nil)
			de.Flags = d.Flags
			return nil, de
		case event.Modify:
			e.Params = d.Params
		}
	}
	return e.Params, nil
}

// timed is decide, measured when a trace wants the time.
func (c *Chain) timed(ctx context.Context, en Entry, e *event.Event, tr *Trace) (event.Decision, time.Time, error) {
	if tr == nil {
		d, err := c.decide(ctx, en, e)
		return d, time.Time{}, err
	}
	start := time.Now()
	d, err := c.decide(ctx, en, e)
	return d, start, err
}

// Response runs the sanitizers for a response event and returns the result
// to hand back (changed by any modify decisions), or an error: a
// *DeniedError when a sanitizer denies it, a *WithheldError when one fails.
func (c *Chain) Response(ctx context.Context, e *event.Event) (json.RawMessage, error) {
	e.Phase = event.PhaseResponse
	if c == nil {
		return e.Result, nil
	}
	tr := TraceFrom(ctx)
	for _, en := range c.entries {
		if en.Kind != KindSanitizer || !en.selects(e) {
			continue
		}
		d, start, err := c.timed(ctx, en, e, tr)
		if err != nil {
			tr.add(en, e.Method, ActionError, err.Error(), nil, start)
			if en.OnError == OnErrorPass || en.Shadow {
				continue
			}
			return nil, &WithheldError{Link: en.Link.Name(), Err: err}
		}
		tr.add(en, e.Method, d.Action, d.Reason, d.Flags, start)
		if en.Shadow {
			continue
		}
		switch d.Action {
		case event.Deny:
			return nil, c.denied(en, e, d.Reason, nil)
		case event.Modify:
			e.Result = d.Result
		}
	}
	return e.Result, nil
}

// ErrInvalidDecision wraps a decision a link should never return.
var ErrInvalidDecision = errors.New("invalid decision")

func (c *Chain) decide(ctx context.Context, en Entry, e *event.Event) (event.Decision, error) {
	if err := ctx.Err(); err != nil {
		return event.Decision{}, err
	}
	d, err := en.Link.Handle(ctx, e)
	if err != nil {
		return d, err
	}
	if !d.Valid(e.Phase) {
		return d, fmt.Errorf("%w: action %q in the %s phase", ErrInvalidDecision, d.Action, e.Phase)
	}
	d.Flags = clipFlags(d.Flags)
	if d.Action == event.Modify {
		field := d.Params
		if e.Phase == event.PhaseResponse {
			field = d.Result
		}
		if !wire.ValidJSON(field) { // one pass, not encoding/json's: a result may be large
			return d, fmt.Errorf("%w: modify carries invalid JSON", ErrInvalidDecision)
		}
	}
	return d, nil
}

// What a link's flags may take: they are logged, and a filter that flags
// every word of a description must not flood the log.
const (
	maxFlags    = 16
	maxFlagText = 4 << 10
)

// clipFlags keeps at most maxFlags flags of at most maxFlagText bytes
// each, and says how many more there were.
func clipFlags(flags []string) []string {
	if len(flags) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(flags), maxFlags+1))
	for i, f := range flags {
		if i == maxFlags {
			out = append(out, fmt.Sprintf("(and %d more)", len(flags)-maxFlags))
			break
		}
		if len(f) > maxFlagText {
			f = f[:maxFlagText] + "..."
		}
		out = append(out, f)
	}
	return out
}

func (c *Chain) denied(en Entry, e *event.Event, reason string, err error) *DeniedError {
	tool := ""
	if e.Tool != nil {
		tool = e.Tool.Name
	}
	return &DeniedError{Link: en.Link.Name(), Kind: en.Kind, Reason: reason, Method: e.Method, Server: e.Server.Name, Tool: tool, Err: err}
}

// Func adapts a function to a Link, for built-in checks and tests.
type Func struct {
	N string
	F func(ctx context.Context, e *event.Event) (event.Decision, error)
}

func (f Func) Name() string { return f.N }
func (f Func) Handle(ctx context.Context, e *event.Event) (event.Decision, error) {
	return f.F(ctx, e)
}

// Actions a Step records beside event.Allow, Deny and Modify.
const (
	ActionError       = "error"        // the link failed
	ActionWouldDeny   = "would-deny"   // a shadow link denied: not enforced
	ActionWouldModify = "would-modify" // a shadow link modified: not applied
	ActionAsk         = "ask"          // a person would be asked (a dry run)
)

// Step is what one link did with one event.
type Step struct {
	Link   string
	Kind   Kind
	Source string // where the link is defined, file:line
	Method string
	// Action is event.Allow, Deny or Modify, or ActionError, or for a
	// shadow link ActionWouldDeny or ActionWouldModify.
	Action   string
	Reason   string
	Flags    []string
	Start    time.Time // zero when no time was taken
	Duration time.Duration
}

// Trace collects the steps of every event decided under a context that
// carries it (WithTrace): what audit, explain and tracing report. Without
// one, the chain measures nothing. The zero value is ready to use.
//
// A Trace from NewTrace keeps its steps in a pooled buffer, which Release
// hands to the next request once its owner has read them: a trace is made
// for every observed call, and its steps are most of what observing a call
// allocates. A link that records after the release (a filter that timed
// out and finished late) finds the trace released and records nothing, as
// the buffer then belongs to another request.
type Trace struct {
	gen uint64 // the buffer's generation this trace owns
	buf atomic.Pointer[traceBuf]
}

type traceBuf struct {
	mu    sync.Mutex
	gen   uint64 // bumped by Release: older traces are locked out
	steps []Step
}

// traceSteps is the room a buffer starts with: a request's usual few.
const traceSteps = 6

var traceBufs = sync.Pool{New: func() any { return &traceBuf{steps: make([]Step, 0, traceSteps)} }}

// NewTrace returns a trace whose owner calls Release when done with it.
func NewTrace() *Trace {
	b := traceBufs.Get().(*traceBuf)
	b.mu.Lock()
	t := &Trace{gen: b.gen}
	b.mu.Unlock()
	t.buf.Store(b)
	return t
}

// Release gives the trace's buffer to the next request. The steps Since
// returned are not to be read after it; Steps' copies may be.
func (t *Trace) Release() {
	b := t.buf.Load()
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.gen != t.gen { // released before
		b.mu.Unlock()
		return
	}
	b.gen++
	clear(b.steps) // strings and flags are not kept alive by the pool
	b.steps = b.steps[:0]
	keep := cap(b.steps) <= 8*traceSteps
	b.mu.Unlock()
	if keep {
		traceBufs.Put(b)
	}
}

// lock returns the trace's buffer locked, or nil when the trace has been
// released (its buffer is another's now).
func (t *Trace) lock() *traceBuf {
	b := t.buf.Load()
	if b == nil {
		nb := &traceBuf{}
		if !t.buf.CompareAndSwap(nil, nb) {
			nb = t.buf.Load()
		}
		b = nb
	}
	b.mu.Lock()
	if b.gen != t.gen {
		b.mu.Unlock()
		return nil
	}
	return b
}

// Len is the number of steps so far.
func (t *Trace) Len() int {
	if t == nil {
		return 0
	}
	b := t.lock()
	if b == nil {
		return 0
	}
	defer b.mu.Unlock()
	return len(b.steps)
}

// Since returns the steps from the n-th on, without a copy: for the
// request's own goroutine, once the steps it waits for are recorded, and
// until Release.
func (t *Trace) Since(n int) []Step {
	if t == nil {
		return nil
	}
	b := t.lock()
	if b == nil {
		return nil
	}
	defer b.mu.Unlock()
	if n >= len(b.steps) {
		return nil
	}
	return b.steps[n:len(b.steps):len(b.steps)]
}

// record adds s unless the trace has been released.
func (t *Trace) record(s Step) {
	b := t.lock()
	if b == nil {
		return
	}
	if b.steps == nil {
		b.steps = make([]Step, 0, traceSteps)
	}
	b.steps = append(b.steps, s)
	b.mu.Unlock()
}

type traceKey struct{}

// WithTrace returns ctx carrying tr.
func WithTrace(ctx context.Context, tr *Trace) context.Context {
	return ctxval.With(ctx, traceKey{}, tr)
}

// TraceFrom returns the trace ctx carries, or nil.
func TraceFrom(ctx context.Context) *Trace {
	tr, _ := ctx.Value(traceKey{}).(*Trace)
	return tr
}

// Steps returns a copy of the steps so far.
func (t *Trace) Steps() []Step {
	if t == nil {
		return nil
	}
	b := t.lock()
	if b == nil {
		return nil
	}
	defer b.mu.Unlock()
	return append([]Step(nil), b.steps...)
}

// Now is the time a built-in check starts, when the trace wants times.
func (t *Trace) Now() time.Time {
	if t == nil {
		return time.Time{}
	}
	return time.Now()
}

// Builtin records a built-in check (permission, lock, schema) that began
// at start: allowed when err is nil, else denied (or, for a request a
// person would be asked about, "ask").
func (t *Trace) Builtin(link, method string, err error, start time.Time) {
	if t == nil {
		return
	}
	s := Step{Link: link, Method: method, Action: event.Allow, Start: start, Duration: time.Since(start)}
	if err != nil {
		s.Action, s.Reason = event.Deny, err.Error()
		var de *DeniedError
		if errors.As(err, &de) && de.Reason != "" {
			s.Reason = de.Reason
		}
	}
	t.Add(s)
}

// Add records a step of a built-in link (permission, rules, lock,
// schema): the chain records its own.
func (t *Trace) Add(s Step) {
	if t == nil {
		return
	}
	t.record(s)
}

func (t *Trace) add(en Entry, method, action, reason string, flags []string, start time.Time) {
	if t == nil {
		return
	}
	if en.Shadow {
		switch action {
		case event.Deny:
			action = ActionWouldDeny
		case event.Modify:
			action = ActionWouldModify
		}
	}
	t.record(Step{Link: en.Link.Name(), Kind: en.Kind, Source: en.Source, Method: method, Action: action, Reason: reason, Flags: flags,
		Start: start, Duration: time.Since(start)})
}
