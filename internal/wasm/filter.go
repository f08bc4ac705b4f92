package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	abi "github.com/nexus-mcp/nexus/internal/filterabi"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Filter is a loaded WASM filter: a compiled module, its limits and a pool
// of instances. It is a policy.Link; its methods are safe for concurrent
// use, and calls run in parallel up to the pool size.
type Filter struct {
	rt       *Runtime
	spec     Spec
	mod      *module
	logger   hclog.Logger
	memLimit uint64
	minor    int        // the guest's ABI minor version, -1 until known
	opa      *opaPolicy // an OPA policy's builtins and entrypoint, known with the first instance

	tokens chan struct{}  // one per instance that may exist
	idle   chan *instance // started instances not in use
	done   chan struct{}  // closed by Close
	closed atomic.Bool
	// starting is held (read) while an instance is made: Close takes it
	// before closing the runtime, since closing a wazero runtime under an
	// instantiation in progress crashes wazero.
	starting sync.RWMutex
	// live are the instances started and not yet closed, so Close can
	// stop the calls in flight.
	liveMu   sync.Mutex
	live     map[*instance]struct{}
	once     sync.Once
	setup    error
	hashOnce sync.Once
}

var _ policy.Link = (*Filter)(nil)

func newFilter(r *Runtime, spec Spec, m *module) *Filter {
	return &Filter{
		rt:       r,
		spec:     spec,
		mod:      m,
		logger:   r.logger.With("filter", spec.Name),
		memLimit: uint64(spec.MemoryMB) << 20,
		minor:    -1,
		tokens:   make(chan struct{}, spec.Pool),
		idle:     make(chan *instance, spec.Pool),
		done:     make(chan struct{}),
		live:     map[*instance]struct{}{},
	}
}

// Name is the filter's name from the config.
func (f *Filter) Name() string { return f.spec.Name }

// Spec is the filter's spec, with the defaults filled in.
func (f *Filter) Spec() Spec { return f.spec }

// Inspect describes the filter's module.
func (f *Filter) Inspect() Info {
	f.hashOnce.Do(func() {
		if f.mod.info.SHA256 == "" {
			f.mod.info.SHA256 = sha256Hex(f.mod.code)
		}
	})
	info := *f.mod.info
	info.Exports = append([]Symbol(nil), info.Exports...)
	info.Imports = append([]Symbol(nil), info.Imports...)
	return info
}

// Close closes every instance. Calls in flight fail; later calls fail with
// ErrClosed.
func (f *Filter) Close(ctx context.Context) error {
	if !f.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(f.done)
	f.starting.Lock() // no instance is being made from here on
	defer f.starting.Unlock()
	f.liveMu.Lock()
	for inst := range f.live {
		inst.trip() // calls in flight stop at their next loop
	}
	f.liveMu.Unlock()
	for {
		select {
		case inst := <-f.idle:
			inst.close(ctx)
			continue
		default:
		}
		break
	}
	f.rt.remove(f)
	return f.mod.wr.Close(ctx)
}

// LogLine is one thing a filter logged during a call: through the log
// host function, or on stdout or stderr.
type LogLine struct {
	Level  abi.Level
	Stream string // "log", "stdout" or "stderr"
	Text   string
}

// Result is a call's decision, how long it took and what the filter
// logged.
type Result struct {
	Decision event.Decision
	Duration time.Duration
	Log      []LogLine
}

// Handle decides one event: it implements policy.Link. Errors are
// *CallError values naming the filter, the event and the cause; the chain
// fails closed on them.
func (f *Filter) Handle(ctx context.Context, e *event.Event) (event.Decision, error) {
	res, err := f.call(ctx, e)
	return res.Decision, err
}

// Call is Handle that also returns the time taken and the filter's log
// (which goes to the runtime's logger as well). On error the Result still
// holds the log.
func (f *Filter) Call(ctx context.Context, e *event.Event) (Result, error) {
	start := time.Now()
	res, err := f.call(ctx, e)
	res.Duration = time.Since(start)
	return res, err
}

type instKey struct{}

// instance is one instantiated module. It serves one call at a time.
type instance struct {
	f        *Filter
	mod      api.Module
	mem      api.Memory
	inputBuf api.Function
	onEvent  api.Function
	inPtr    uint32 // the input buffer the guest last handed out
	inCap    uint32
	calls    int
	alloc    *allocator
	logs     logCapture
	stack    [2]uint64
	enc      []byte // the event's JSON, reused from call to call

	opa *opaState // an OPA policy's instance state; nil for a Nexus ABI module

	// tripped says the call's deadline passed (or its caller left, or the
	// filter closed): the guest's next yield ends the call
	// (interrupt.go), and the instance is not reused.
	tripped atomic.Bool

	// The event of the call in progress, for the host functions.
	ev        *event.Event
	texts     []*string
	textsDone bool
}

func (inst *instance) close(ctx context.Context) {
	if inst.mod != nil {
		inst.mod.Close(ctx)
	}
	inst.f.liveMu.Lock()
	delete(inst.f.live, inst)
	inst.f.liveMu.Unlock()
}

// trip stops the guest at its next yield.
func (inst *instance) trip() { inst.tripped.Store(true) }

// yield is a guest's yield (interrupt.go): it ends the call when the
// instance was tripped.
func (inst *instance) yield() {
	if inst.tripped.Load() {
		panic(sys.NewExitError(sys.ExitCodeDeadlineExceeded))
	}
}

// guard trips the instance when ctx ends, until the returned func is
// called; that func reports whether the instance may be used again (it
// was not tripped). A module without yields is watched by wazero.
func (inst *instance) guard(ctx context.Context) func() bool {
	if !inst.f.mod.interrupt {
		return func() bool { return true }
	}
	stop := context.AfterFunc(ctx, inst.trip)
	return func() bool { return stop() && !inst.tripped.Load() }
}

// hostModule instantiates the host functions and WASI in the filter's
// runtime, once.
func (f *Filter) hostModule(ctx context.Context) error {
	f.once.Do(func() {
		wr := f.mod.wr
		b := wr.NewHostModuleBuilder(abi.HostModule)
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostLog), []api.ValueType{i32, i32, i32}, nil).Export(abi.ImportLog)
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostField), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export(abi.ImportField)
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostContentText), []api.ValueType{i32, i32, i32}, []api.ValueType{i32}).Export(abi.ImportContentText)
		if _, err := b.Instantiate(ctx); err != nil {
			f.setup = err
			return
		}
		_, f.setup = wasi_snapshot_preview1.Instantiate(ctx, wr)
	})
	return f.setup
}

func (f *Filter) startTimeout() time.Duration { return max(2*time.Second, 10*f.spec.Timeout) }

// start instantiates the module (running _initialize, which for a Go
// guest starts its runtime and runs its init functions) and, when
// configure is set, hands it the config.
func (f *Filter) start(ctx context.Context, configure bool) (*instance, error) {
	f.starting.RLock()
	defer f.starting.RUnlock()
	if f.closed.Load() {
		return nil, ErrClosed
	}
	setup := f.hostModule
	if f.mod.opa {
		setup = f.opaHostModule
	}
	if err := setup(ctx); err != nil {
		return nil, fmt.Errorf("%w: host functions: %v", ErrStart, err)
	}
	inst := &instance{f: f, alloc: &allocator{limit: f.memLimit}}
	inst.logs.limit = f.rt.logLimit
	// No files, network, environment, arguments or stdin: only the
	// capped log, the real clocks and crypto-grade random. Sleeping stays
	// wazero's no-op: a real sleep inside a host function could not be
	// cut short by the call's timeout, while a guest that spins waiting
	// for its clock is stopped by it. An OPA policy has no start function
	// and imports nothing of WASI.
	mc := wazero.NewModuleConfig().WithName("")
	if f.mod.opa {
		inst.opa = &opaState{}
		mc = mc.WithStartFunctions()
	} else {
		mc = mc.WithStartFunctions("_initialize").
			WithStdout(streamWriter{&inst.logs, 0}).
			WithStderr(streamWriter{&inst.logs, 1}).
			WithSysWalltime().
			WithSysNanotime().
			WithRandSource(rand.Reader)
	}
	sctx := experimental.WithMemoryAllocator(ctx, inst.alloc)
	sctx = context.WithValue(sctx, instKey{}, inst)
	sctx, cancel := context.WithTimeout(sctx, f.startTimeout())
	defer cancel()
	defer inst.logs.flush(f.logger)

	done := inst.guard(sctx)
	mod, err := f.mod.wr.InstantiateModule(sctx, f.mod.compiled, mc)
	if err != nil {
		done()
		return nil, fmt.Errorf("%w: %w", ErrStart, f.cause(ctx, inst, err, f.startTimeout()))
	}
	inst.mod, inst.mem = mod, mod.Memory()
	f.liveMu.Lock()
	f.live[inst] = struct{}{}
	f.liveMu.Unlock()
	started, err := f.ready(ctx, sctx, inst, configure)
	if reusable := done(); err == nil && !reusable {
		// The deadline came as it finished: its state is in doubt.
		inst.close(ctx)
		return nil, fmt.Errorf("%w: %w", ErrStart, f.cause(ctx, inst, errors.New("stopped"), f.startTimeout()))
	}
	return started, err
}

// ready runs what comes after instantiation (and _initialize, which for
// a Go guest starts its runtime and runs its init functions), under the
// start deadline: the ABI's questions, the config. On error the instance
// is closed.
func (f *Filter) ready(ctx, sctx context.Context, inst *instance, configure bool) (*instance, error) {
	mod := inst.mod
	if f.mod.opa {
		return f.readyOPA(ctx, sctx, inst)
	}
	inst.inputBuf = mod.ExportedFunction(abi.ExportInputBuf)
	inst.onEvent = mod.ExportedFunction(abi.ExportOnEvent)
	if inst.mem == nil || inst.inputBuf == nil || inst.onEvent == nil {
		inst.close(ctx)
		return nil, fmt.Errorf("%w: the instance lacks its exports", ErrStart)
	}
	if f.minor < 0 {
		res, err := mod.ExportedFunction(abi.ExportMinor).Call(sctx)
		if err != nil {
			inst.close(ctx)
			return nil, fmt.Errorf("%w: nx_abi_minor: %w", ErrStart, f.cause(ctx, inst, err, f.startTimeout()))
		}
		f.minor = max(0, int(int32(res[0])))
	}
	if configure {
		if err := inst.configure(sctx, f.spec.Config); err != nil {
			inst.close(ctx)
			if !errors.Is(err, ErrConfigure) {
				err = fmt.Errorf("%w: nx_configure: %w", ErrStart, f.cause(ctx, inst, err, f.startTimeout()))
			}
			return nil, err
		}
	}
	return inst, nil
}

// configure hands the config to nx_configure.
func (inst *instance) configure(ctx context.Context, config []byte) error {
	if err := inst.write(ctx, config); err != nil {
		return err
	}
	res, err := inst.mod.ExportedFunction(abi.ExportConfigure).Call(ctx, uint64(inst.inPtr), uint64(len(config)))
	if err != nil {
		return err
	}
	if rc := int32(res[0]); rc != 0 {
		msg := inst.logs.lastError()
		if msg == "" {
			msg = fmt.Sprintf("nx_configure returned %d and logged no reason", rc)
		}
		return fmt.Errorf("%w: %s", ErrConfigure, msg)
	}
	return nil
}

// write puts input in the guest's input buffer, asking for a larger one
// when it does not fit in the last.
func (inst *instance) write(ctx context.Context, input []byte) error {
	if len(input) > maxInput {
		return fmt.Errorf("%w: the event is %s, over the %s limit", ErrInput, MiB(uint64(len(input))), MiB(maxInput))
	}
	n := uint32(len(input))
	if inst.inPtr == 0 || n > inst.inCap {
		inst.stack[0] = uint64(n)
		if err := inst.inputBuf.CallWithStack(ctx, inst.stack[:1]); err != nil {
			return err
		}
		ptr := uint32(inst.stack[0])
		if ptr == 0 {
			return fmt.Errorf("%w: nx_input_buf(%d) returned 0: the guest could not make a buffer", ErrInput, n)
		}
		if uint64(ptr)+uint64(n) > uint64(inst.mem.Size()) {
			return fmt.Errorf("%w: nx_input_buf(%d) returned %#x, and that buffer ends outside the guest's memory (%s)", ErrInput, n, ptr, MiB(uint64(inst.mem.Size())))
		}
		inst.inPtr, inst.inCap = ptr, n
	}
	if !inst.mem.Write(inst.inPtr, input) {
		return fmt.Errorf("%w: the input buffer at %#x is outside the guest's memory", ErrInput, inst.inPtr)
	}
	return nil
}

// maxInput bounds an event.
const maxInput = 64 << 20

// acquire takes an instance from the pool, starting one when the pool has
// room, or waits for one.
func (f *Filter) acquire(ctx context.Context) (*instance, error) {
	select {
	case f.tokens <- struct{}{}:
	default:
		select {
		case f.tokens <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.done:
			return nil, ErrClosed
		}
	}
	if f.closed.Load() {
		<-f.tokens
		return nil, ErrClosed
	}
	select {
	case inst := <-f.idle:
		return inst, nil
	default:
	}
	inst, err := f.start(ctx, true)
	if err != nil {
		<-f.tokens
		return nil, err
	}
	return inst, nil
}

// put returns an instance to the idle list.
func (f *Filter) put(inst *instance) {
	if f.closed.Load() {
		inst.close(context.Background())
		return
	}
	select {
	case f.idle <- inst:
	default:
		inst.close(context.Background())
	}
}

// release returns an instance after a call, or replaces it after too many.
func (f *Filter) release(inst *instance) {
	if f.spec.MaxCalls > 0 && inst.calls >= f.spec.MaxCalls {
		inst.close(context.Background())
	} else {
		f.put(inst)
	}
	select {
	case <-f.tokens:
	default:
	}
}

// discard drops an instance that failed: the next call starts a new one.
func (f *Filter) discard(inst *instance) {
	inst.close(context.Background())
	select {
	case <-f.tokens:
	default:
	}
}

func (f *Filter) call(ctx context.Context, e *event.Event) (Result, error) {
	inst, err := f.acquire(ctx)
	if err != nil {
		return Result{}, callError(f.spec.Name, e, err)
	}
	if err := ctx.Err(); err != nil {
		f.release(inst) // a caller already gone: the guest is not run
		return Result{}, callError(f.spec.Name, e, err)
	}
	input, err := appendEvent(inst.enc[:0], e)
	if err != nil {
		f.release(inst)
		return Result{}, callError(f.spec.Name, e, fmt.Errorf("%w: the event does not encode: %v", ErrInput, err))
	}
	if cap(input) <= 1<<20 {
		inst.enc = input // reuse the buffer, unless one huge event grew it
	}
	inst.ev, inst.texts, inst.textsDone = e, nil, false
	inst.alloc.refused = 0
	cctx, cancel := context.WithTimeout(ctx, f.spec.Timeout)
	done := inst.guard(cctx)
	cctx = context.WithValue(cctx, instKey{}, inst)
	var out []byte
	if inst.opa != nil {
		out, err = inst.runOPA(cctx, input)
	} else {
		out, err = inst.run(cctx, input)
	}
	reusable := done()
	cancel()
	var d event.Decision
	switch {
	case err == nil && inst.opa != nil:
		d, err = f.decideOPA(out, e.Phase)
	case err == nil:
		d, err = decodeDecision(out, e.Phase)
	}
	inst.ev, inst.texts = nil, nil
	if err != nil {
		// The instance is sound when only its answer was wrong.
		sound := errors.Is(err, ErrBadDecision) || errors.Is(err, ErrFailed) || errors.Is(err, ErrOutputBounds) || errors.Is(err, ErrOutputTooLarge)
		if !sound {
			err = f.cause(ctx, inst, err, f.spec.Timeout)
		}
		log := inst.logs.flush(f.logger)
		if sound && reusable {
			inst.calls++
			f.release(inst)
		} else {
			f.discard(inst)
		}
		return Result{Log: log}, callError(f.spec.Name, e, err)
	}
	res := Result{Decision: d, Log: inst.logs.flush(f.logger)}
	inst.calls++
	if !reusable {
		// Its deadline came just as it answered: the answer stands, the
		// instance (tripped) goes.
		f.discard(inst)
		return res, nil
	}
	f.release(inst)
	return res, nil
}

// run passes input to nx_on_event and returns the decision bytes, a view
// of the guest's memory valid until the next call.
func (inst *instance) run(ctx context.Context, input []byte) ([]byte, error) {
	if err := inst.write(ctx, input); err != nil {
		return nil, err
	}
	inst.stack[0], inst.stack[1] = uint64(inst.inPtr), uint64(len(input))
	if err := inst.onEvent.CallWithStack(ctx, inst.stack[:2]); err != nil {
		return nil, err
	}
	ptr, n := uint32(inst.stack[0]>>32), uint32(inst.stack[0])
	if n > MaxOutput {
		return nil, fmt.Errorf("%w: the decision is %s, over the %s limit", ErrOutputTooLarge, MiB(uint64(n)), MiB(MaxOutput))
	}
	out, ok := inst.mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%w: nx_on_event returned %d bytes at %#x, past the end of its memory (%s)", ErrOutputBounds, n, ptr, MiB(uint64(inst.mem.Size())))
	}
	return out, nil
}

// cause turns an error of wazero into the reason a person can act on.
func (f *Filter) cause(parent context.Context, inst *instance, err error, limit time.Duration) error {
	if errors.Is(err, ErrInput) || errors.Is(err, ErrConfigure) {
		return err
	}
	if f.closed.Load() {
		return ErrClosed
	}
	tail := inst.logs.stderrTail()
	if inst.alloc.refused > 0 {
		return fmt.Errorf("%w: the filter asked for %s of memory, over its limit of %s (limits.memory_mb), and then %v; the instance was discarded%s",
			ErrMemoryLimit, MiB(inst.alloc.refused), MiB(inst.alloc.limit), firstLine(err), tail)
	}
	if inst.opa != nil && inst.opa.abort != "" {
		return fmt.Errorf("%w: the policy aborted: %s; the instance was discarded", ErrTrap, inst.opa.abort)
	}
	if inst.tripped.Load() {
		// A yield ended the guest (interrupt.go): the deadline, the caller
		// gone, or the filter closed.
		if f.closed.Load() {
			return ErrClosed
		}
		err = sys.NewExitError(sys.ExitCodeDeadlineExceeded)
	}
	var ee *sys.ExitError
	if errors.As(err, &ee) {
		switch ee.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			if perr := parent.Err(); perr != nil {
				return perr
			}
			return fmt.Errorf("%w after %v (limits.timeout); the instance was stopped and discarded%s", ErrTimeout, limit, tail)
		case sys.ExitCodeContextCanceled:
			if perr := parent.Err(); perr != nil {
				return perr
			}
			return context.Canceled
		}
		return fmt.Errorf("%w with code %d; the instance was discarded%s", ErrExit, ee.ExitCode(), tail)
	}
	return fmt.Errorf("%w: %s; the instance was discarded%s", ErrTrap, firstLine(err), tail)
}

// firstLine keeps a wazero error's message and the top frame of its stack
// trace.
func firstLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	s := lines[0]
	for i, l := range lines {
		if strings.HasPrefix(l, "wasm stack trace:") && i+1 < len(lines) {
			s += " (in " + strings.TrimSpace(lines[i+1]) + ")"
			break
		}
	}
	return s
}

var allowJSON = []byte(`{"action":"allow"}`)

// maxReason bounds a reason, which people read.
const maxReason = 4096

func decodeDecision(out []byte, phase string) (event.Decision, error) {
	if bytes.Equal(out, allowJSON) {
		return event.Decision{Action: event.Allow}, nil
	}
	var w struct {
		Action string          `json:"action"`
		Reason string          `json:"reason"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Flags  []string        `json:"flags"`
		Error  *string         `json:"error"`
	}
	if fd, failure, ok := fastDecision(out); ok {
		w.Action, w.Reason, w.Params, w.Result, w.Error = fd.Action, fd.Reason, fd.Params, fd.Result, failure
	} else if err := json.Unmarshal(out, &w); err != nil {
		return event.Decision{}, fmt.Errorf("%w: the decision is not JSON (%v): %s", ErrBadDecision, err, preview(out))
	}
	if w.Error != nil {
		return event.Decision{}, fmt.Errorf("%w: %s", ErrFailed, clip(*w.Error, maxReason))
	}
	for _, raw := range []*json.RawMessage{&w.Params, &w.Result} {
		if string(*raw) == "null" {
			*raw = nil
		}
	}
	d := event.Decision{Action: w.Action, Reason: clip(w.Reason, maxReason), Params: w.Params, Result: w.Result, Flags: w.Flags}
	switch d.Action {
	case event.Allow, event.Deny:
		return d, nil
	case event.Modify:
		if phase == event.PhaseResponse && len(d.Result) == 0 {
			return d, fmt.Errorf("%w: modify in the response phase carries no result", ErrBadDecision)
		}
		if phase != event.PhaseResponse && len(d.Params) == 0 {
			return d, fmt.Errorf("%w: modify in the request phase carries no params", ErrBadDecision)
		}
		return d, nil
	}
	return event.Decision{}, fmt.Errorf("%w: unknown action %q (want allow, deny or modify)", ErrBadDecision, clip(d.Action, 64))
}

func preview(b []byte) string {
	const n = 80
	if len(b) > n {
		return fmt.Sprintf("%q...", b[:n])
	}
	return fmt.Sprintf("%q", b)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// The host functions. Each finds its instance in the call's context.

func hostLog(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*instance)
	if inst == nil {
		return
	}
	level, ptr, n := abi.Level(int32(stack[0])), uint32(stack[1]), uint32(stack[2])
	if level == yieldLevel {
		inst.yield()
		return
	}
	b, ok := mod.Memory().Read(ptr, n)
	if !ok {
		inst.logs.add(abi.LevelError, "log", fmt.Sprintf("(log called with %d bytes at %#x, outside the filter's memory)", n, ptr))
		return
	}
	inst.logs.addBytes(level, b)
}

func hostField(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*instance)
	if inst == nil || inst.ev == nil {
		stack[0] = api.EncodeI32(abi.Absent)
		return
	}
	id := abi.Field(int32(stack[0]))
	if id == abi.FieldParams || id == abi.FieldResult {
		raw := inst.ev.Params
		if id == abi.FieldResult {
			raw = inst.ev.Result
		}
		stack[0] = api.EncodeI32(copyRaw(mod, raw, uint32(stack[1]), uint32(stack[2])))
		return
	}
	s, n := abi.FieldOf(inst.ev, id, inst.f.rt.session)
	stack[0] = api.EncodeI32(copyOut(mod, s, n, uint32(stack[1]), uint32(stack[2])))
}

// copyRaw is copyOut for the JSON fields, without a string copy.
func copyRaw(mod api.Module, raw []byte, ptr, capacity uint32) int32 {
	if len(raw) == 0 {
		return abi.Absent
	}
	if uint32(len(raw)) <= capacity && !mod.Memory().Write(ptr, raw) {
		return abi.OutOfRange
	}
	return int32(len(raw))
}

func hostContentText(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*instance)
	if inst == nil || inst.ev == nil {
		stack[0] = api.EncodeI32(abi.Absent)
		return
	}
	if !inst.textsDone {
		inst.texts, inst.textsDone = abi.ContentTexts(inst.ev.Result), true
	}
	s, n := abi.ContentTextOf(inst.texts, int(int32(stack[0])))
	stack[0] = api.EncodeI32(copyOut(mod, s, n, uint32(stack[1]), uint32(stack[2])))
}

// copyOut writes as much of s as fits in the guest's buffer and returns
// n, the full length (or the negative status).
func copyOut(mod api.Module, s string, n int32, ptr, capacity uint32) int32 {
	if n <= 0 {
		return n
	}
	if uint32(len(s)) <= capacity {
		if !mod.Memory().WriteString(ptr, s) {
			return abi.OutOfRange
		}
	}
	return n
}
