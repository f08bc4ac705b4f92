package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	abi "github.com/nexus-mcp/nexus/internal/filterabi"
	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Rego policies compiled by `opa build -t wasm` run as filters beside
// Nexus ABI modules, in the same sandbox: the same memory, table, time and
// output limits, the same pool of instances. What differs is how an event
// goes in and a decision comes out (OPA's documented WebAssembly ABI):
//
//   - At load the module's builtins() names every builtin the policy calls
//     back into the host for; each must be one this host implements
//     (opabuiltins.go). Impure ones (http.send, net.lookup_ip_addr,
//     opa.runtime, randomness) are refused there, naming the builtin.
//   - Each instance parses the data document (the bundle's data.json, the
//     data file, then the filter's config, each merged over the last) once,
//     and remembers the heap pointer after it.
//   - A call writes the event JSON (the very bytes Nexus ABI filters get)
//     above that pointer and calls opa_eval, which resets the heap to it:
//     nothing accumulates from call to call.
//   - The entrypoint's value becomes the decision: true allows and false
//     denies; a set (array) of strings denies with those reasons unless it
//     is empty; an object {action, reason, params, result, flags} maps one
//     to one onto a decision. An undefined result denies.

// ABI names of Spec.ABI.
const (
	ABINexus = "1"   // sdk/filter/ABI.md
	ABIOPA   = "opa" // a Rego policy built by `opa build -t wasm`
)

// OPA's exports that Nexus calls, with their signatures.
var opaExports = []struct {
	name string
	sig  sig
}{
	{"opa_eval", sig{[]api.ValueType{i32, i32, i32, i32, i32, i32, i32}, []api.ValueType{i32}}},
	{"opa_malloc", sig{[]api.ValueType{i32}, []api.ValueType{i32}}},
	{"opa_json_parse", sig{[]api.ValueType{i32, i32}, []api.ValueType{i32}}},
	{"opa_json_dump", sig{[]api.ValueType{i32}, []api.ValueType{i32}}},
	{"opa_heap_ptr_get", sig{nil, []api.ValueType{i32}}},
	{"builtins", sig{nil, []api.ValueType{i32}}},
	{"entrypoints", sig{nil, []api.ValueType{i32}}},
}

// The host functions an OPA module may import from "env".
var opaImports = map[string]sig{
	"opa_abort":    {[]api.ValueType{i32}, nil},
	"opa_println":  {[]api.ValueType{i32}, nil},
	"opa_builtin0": {[]api.ValueType{i32, i32}, []api.ValueType{i32}},
	"opa_builtin1": {[]api.ValueType{i32, i32, i32}, []api.ValueType{i32}},
	"opa_builtin2": {[]api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}},
	"opa_builtin3": {[]api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i32}},
	"opa_builtin4": {[]api.ValueType{i32, i32, i32, i32, i32, i32}, []api.ValueType{i32}},
}

// checkOPA fills info for an OPA module and lists what keeps it from
// running as a filter.
func checkOPA(cm wazero.CompiledModule, info *Info) error {
	funcs := cm.ExportedFunctions()
	var problems []string
	for _, want := range opaExports {
		d, ok := funcs[want.name]
		switch {
		case !ok && want.name == "opa_eval":
			problems = append(problems, "missing export: func opa_eval (OPA WebAssembly ABI 1.2): the module was built by an OPA older than 0.37; rebuild it with a current opa")
		case !ok:
			problems = append(problems, fmt.Sprintf("missing export: func %s %s", want.name, want.sig))
		case !defSig(d).equal(want.sig):
			problems = append(problems, fmt.Sprintf("wrong signature: %s is %s; the OPA ABI has %s", want.name, defSig(d), want.sig))
		}
	}
	if _, ok := cm.ExportedMemories()[abi.ExportMemory]; !ok {
		problems = append(problems, "missing export: memory \"memory\" (OPA WebAssembly ABI 1.1)")
	}
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		want, ok := opaImports[name]
		switch {
		case mod != "env" || !ok:
			problems = append(problems, fmt.Sprintf("imports %s.%s; an OPA policy may import only env.opa_abort, env.opa_println and env.opa_builtin0..4", mod, name))
		case !defSig(d).equal(want):
			problems = append(problems, fmt.Sprintf("wrong signature: import %s.%s is %s; the OPA ABI has %s", mod, name, defSig(d), want))
		}
	}
	info.Problems = problems
	if len(problems) > 0 {
		return ErrExports
	}
	return nil
}

// opaPolicy is what a filter knows of its OPA module once the first
// instance has started: the same for every instance.
type opaPolicy struct {
	entrypoint int32
	entryName  string
	builtins   map[int32]opaBuiltin
}

// opaState is an instance's OPA state.
type opaState struct {
	eval, malloc, parse, dump api.Function
	dataAddr                  uint32 // the parsed data document; 0 = none
	heap                      uint32 // the heap pointer after the data
	now                       int64  // time.now_ns of the call in progress; 0 = not read yet
	abort                     string // what opa_abort said
	stack                     [7]uint64
}

// opaHostModule provides env.opa_* to the filter's runtime, once.
func (f *Filter) opaHostModule(ctx context.Context) error {
	f.once.Do(func() {
		b := f.mod.wr.NewHostModuleBuilder("env")
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(opaAbort), []api.ValueType{i32}, nil).Export("opa_abort")
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(opaPrintln), []api.ValueType{i32}, nil).Export("opa_println")
		for n := range 5 {
			params := make([]api.ValueType, 2+n)
			for i := range params {
				params[i] = i32
			}
			b.NewFunctionBuilder().WithGoModuleFunction(opaBuiltinFunc(n), params, []api.ValueType{i32}).Export(fmt.Sprintf("opa_builtin%d", n))
		}
		_, f.setup = b.Instantiate(ctx)
	})
	return f.setup
}

// readyOPA readies a new instance of an OPA module: it learns the
// module's builtins and entrypoint with the first instance, and parses
// the data document.
func (f *Filter) readyOPA(ctx, sctx context.Context, inst *instance) (*instance, error) {
	mod := inst.mod
	o := inst.opa
	o.eval, o.malloc = mod.ExportedFunction("opa_eval"), mod.ExportedFunction("opa_malloc")
	o.parse, o.dump = mod.ExportedFunction("opa_json_parse"), mod.ExportedFunction("opa_json_dump")
	fail := func(err error) (*instance, error) {
		inst.close(ctx)
		var le *opaLoadError
		if errors.As(err, &le) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrStart, f.cause(ctx, inst, err, f.startTimeout()))
	}
	if f.minor < 0 {
		if g := mod.ExportedGlobal("opa_wasm_abi_minor_version"); g != nil {
			f.minor = int(int32(g.Get()))
		} else {
			f.minor = 0
		}
		if err := f.learnOPA(sctx, inst); err != nil {
			f.minor = -1
			return fail(err)
		}
	}
	if _, err := o.malloc.Call(sctx, 0); err != nil {
		return fail(err)
	}
	// Load made the data document the spec's config.
	if d := f.spec.Config; len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		addr, err := inst.opaParse(sctx, d)
		if err != nil {
			return fail(fmt.Errorf("parsing the data document: %w", err))
		}
		o.dataAddr = addr
	}
	if stash := mod.ExportedFunction("opa_heap_blocks_stash"); stash != nil {
		if _, err := stash.Call(sctx); err != nil {
			return fail(err)
		}
	}
	res, err := mod.ExportedFunction("opa_heap_ptr_get").Call(sctx)
	if err != nil {
		return fail(err)
	}
	o.heap = uint32(res[0])
	return inst, nil
}

// opaLoadError is a policy that cannot run here: a builtin it needs or an
// entrypoint it lacks. Load makes it a *LoadError of its kind, not a
// crash.
type opaLoadError struct {
	kind    LoadKind
	problem string
	lines   []string
	names   []string // the builtins
	want    string   // the entrypoint named, as the policy's build names it
}

func (e *opaLoadError) Error() string {
	if len(e.lines) == 0 {
		return e.problem
	}
	return e.problem + ": " + strings.Join(e.lines, "; ")
}

// learnOPA reads the builtins and entrypoints of the module from its
// first instance.
func (f *Filter) learnOPA(ctx context.Context, inst *instance) error {
	var builtins, entrypoints map[string]int32
	for _, x := range []struct {
		export string
		into   *map[string]int32
	}{{"builtins", &builtins}, {"entrypoints", &entrypoints}} {
		res, err := inst.mod.ExportedFunction(x.export).Call(ctx)
		if err != nil {
			return err
		}
		raw, err := inst.opaDump(ctx, uint32(res[0]))
		if err != nil {
			return fmt.Errorf("%s(): %w", x.export, err)
		}
		if err := json.Unmarshal(raw, x.into); err != nil {
			return fmt.Errorf("%s() is not a map of names to numbers: %v", x.export, err)
		}
	}
	p := &opaPolicy{builtins: map[int32]opaBuiltin{}}
	var impure, missing []string
	for name, id := range builtins {
		b, ok := opaBuiltins[name]
		switch {
		case ok:
			p.builtins[id] = b
		case opaImpure[name] != "":
			impure = append(impure, name)
		default:
			missing = append(missing, name)
		}
	}
	sort.Strings(impure)
	sort.Strings(missing)
	if len(impure) > 0 {
		lines := make([]string, len(impure))
		for i, name := range impure {
			lines[i] = fmt.Sprintf("%s (%s)", name, opaImpure[name])
		}
		return &opaLoadError{kind: LoadOPAImpure, problem: "the policy calls builtins that reach outside the sandbox, which filters may not", lines: lines, names: impure}
	}
	if len(missing) > 0 {
		return &opaLoadError{kind: LoadOPAMissing, problem: "the policy calls builtins this Nexus does not provide to Rego policies", lines: missing, names: missing}
	}
	var names []string
	for n := range entrypoints {
		names = append(names, n)
	}
	sort.Strings(names)
	want := strings.Trim(strings.TrimPrefix(f.spec.Entrypoint, "data."), "/")
	want = strings.ReplaceAll(want, ".", "/")
	switch id, ok := entrypoints[want]; {
	case want == "" && len(names) == 1:
		p.entrypoint, p.entryName = entrypoints[names[0]], names[0]
	case want == "":
		return &opaLoadError{kind: LoadOPAEntrypoints, problem: fmt.Sprintf("the policy has %d entrypoints and the filter block names none", len(names)), lines: names}
	case !ok:
		return &opaLoadError{kind: LoadOPANoEntrypoint, problem: fmt.Sprintf("the policy has no entrypoint %q", f.spec.Entrypoint), lines: names, want: want}
	default:
		p.entrypoint, p.entryName = id, want
	}
	f.opa = p
	return nil
}

// maxOPAString bounds a NUL-terminated string read from the guest.
const maxOPAString = MaxOutput

// opaString reads the NUL-terminated string at addr.
func (inst *instance) opaString(addr uint32) ([]byte, error) {
	size := inst.mem.Size()
	if addr >= size {
		return nil, fmt.Errorf("%w: a string at %#x, past the end of its memory (%s)", ErrOutputBounds, addr, MiB(uint64(size)))
	}
	n := min(size-addr, maxOPAString+1)
	b, _ := inst.mem.Read(addr, n)
	end := bytes.IndexByte(b, 0)
	if end < 0 {
		if n > maxOPAString {
			return nil, fmt.Errorf("%w: a string over the %s limit", ErrOutputTooLarge, MiB(maxOPAString))
		}
		return nil, fmt.Errorf("%w: a string at %#x runs to the end of its memory", ErrOutputBounds, addr)
	}
	return b[:end], nil
}

// opaDump renders the value at addr as JSON (a view of guest memory).
func (inst *instance) opaDump(ctx context.Context, addr uint32) ([]byte, error) {
	res, err := inst.opa.dump.Call(ctx, uint64(addr))
	if err != nil {
		return nil, err
	}
	return inst.opaString(uint32(res[0]))
}

// opaParse copies JSON into the guest and parses it into a value.
func (inst *instance) opaParse(ctx context.Context, raw []byte) (uint32, error) {
	res, err := inst.opa.malloc.Call(ctx, uint64(len(raw)))
	if err != nil {
		return 0, err
	}
	p := uint32(res[0])
	if !inst.mem.Write(p, raw) {
		return 0, fmt.Errorf("%w: opa_malloc(%d) returned %#x, outside its memory", ErrInput, len(raw), p)
	}
	res, err = inst.opa.parse.Call(ctx, uint64(p), uint64(len(raw)))
	if err != nil {
		return 0, err
	}
	if res[0] == 0 {
		return 0, fmt.Errorf("%w: opa_json_parse refused %d bytes of JSON", ErrInput, len(raw))
	}
	return uint32(res[0]), nil
}

// runOPA evaluates the entrypoint with input and returns the result set's
// JSON, a view of guest memory valid until the next call.
func (inst *instance) runOPA(ctx context.Context, input []byte) ([]byte, error) {
	if len(input) > maxInput {
		return nil, fmt.Errorf("%w: the event is %s, over the %s limit", ErrInput, MiB(uint64(len(input))), MiB(maxInput))
	}
	o := inst.opa
	o.now, o.abort = 0, ""
	end := uint64(o.heap) + uint64(len(input))
	if size := uint64(inst.mem.Size()); end > size {
		pages := (end - size + 0xffff) >> 16
		if _, ok := inst.mem.Grow(uint32(pages)); !ok {
			inst.alloc.refused = max(inst.alloc.refused, end)
			return nil, fmt.Errorf("%w: the event (%s) does not fit in the filter's memory limit of %s (limits.memory_mb)", ErrMemoryLimit, MiB(uint64(len(input))), MiB(inst.alloc.limit))
		}
	}
	if !inst.mem.Write(o.heap, input) {
		return nil, fmt.Errorf("%w: the event does not fit in the guest's memory", ErrInput)
	}
	o.stack = [7]uint64{0, uint64(inst.f.opa.entrypoint), uint64(o.dataAddr), uint64(o.heap), uint64(len(input)), end, 0}
	if err := o.eval.CallWithStack(ctx, o.stack[:]); err != nil {
		return nil, err // f.cause says why, from what the instance saw
	}
	return inst.opaString(uint32(o.stack[0]))
}

// decideOPA turns an entrypoint's result set into a decision.
func (f *Filter) decideOPA(out []byte, phase string) (event.Decision, error) {
	r, ok := resultOf(out)
	if !ok {
		var set []struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(out, &set); err != nil {
			return event.Decision{}, fmt.Errorf("%w: the policy's result is not a result set: %v (%s)", ErrBadDecision, err, preview(out))
		}
		if len(set) > 0 {
			r = bytes.TrimSpace(set[0].Result)
		}
	}
	ep := f.opa.entryName
	if len(r) == 0 {
		return event.Decision{Action: event.Deny, Reason: fmt.Sprintf("policy %s: %s is undefined for this event (no rule matched and the rule has no default)", f.spec.Name, ep)}, nil
	}
	// Said only when the result is wrong: formatting it costs more than
	// the rest of a decision.
	shape := func() string {
		return fmt.Sprintf("%s returned %s; a Nexus Rego policy returns true or false (allow), a set of deny reasons, or an object {action, reason, params, result}", ep, preview(r))
	}
	switch r[0] {
	case 't', 'f':
		if string(r) == "true" {
			return event.Decision{Action: event.Allow}, nil
		}
		return event.Decision{Action: event.Deny, Reason: fmt.Sprintf("policy %s: %s is false", f.spec.Name, ep)}, nil
	case '[':
		if string(r) == "[]" { // no deny reason: the common case, without a decoder
			return event.Decision{Action: event.Allow}, nil
		}
		var reasons []json.RawMessage
		if err := json.Unmarshal(r, &reasons); err != nil {
			return event.Decision{}, fmt.Errorf("%w: %s", ErrBadDecision, shape())
		}
		if len(reasons) == 0 {
			return event.Decision{Action: event.Allow}, nil
		}
		texts := make([]string, len(reasons))
		for i, x := range reasons {
			var s string
			if json.Unmarshal(x, &s) != nil {
				s = string(x)
			}
			texts[i] = s
		}
		sort.Strings(texts) // a set has no order; its text should not change from call to call
		return event.Decision{Action: event.Deny, Reason: clip(strings.Join(texts, "; "), maxReason)}, nil
	case '{':
		var d event.Decision
		if err := json.Unmarshal(r, &d); err != nil || d.Action == "" {
			return event.Decision{}, fmt.Errorf("%w: %s (an object needs \"action\")", ErrBadDecision, shape())
		}
		if !d.Valid(phase) {
			what := "params"
			if phase == event.PhaseResponse {
				what = "result"
			}
			if d.Action == event.Modify {
				return event.Decision{}, fmt.Errorf("%w: %s returned action modify without %s", ErrBadDecision, ep, what)
			}
			return event.Decision{}, fmt.Errorf("%w: %s returned action %q; the actions are allow, deny and modify", ErrBadDecision, ep, d.Action)
		}
		d.Reason = clip(d.Reason, maxReason)
		return d, nil
	}
	return event.Decision{}, fmt.Errorf("%w: %s", ErrBadDecision, shape())
}

// resultOf reads a result set as opa_json_dump writes it: [] (undefined,
// an empty r) or [{"result":VALUE}]. ok=false sends anything else to
// encoding/json.
func resultOf(out []byte) (r json.RawMessage, ok bool) {
	const head, tail = `[{"result":`, `}]`
	if string(out) == "[]" {
		return nil, true
	}
	if len(out) < len(head)+len(tail) || string(out[:len(head)]) != head || string(out[len(out)-len(tail):]) != tail {
		return nil, false
	}
	v := out[len(head) : len(out)-len(tail)]
	if end, err := wire.SkipValue(v, 0, 0); err != nil || end != len(v) {
		return nil, false
	}
	return v, true
}

// opaAbort is env.opa_abort: the policy hit an internal error. The message
// is kept for the call's error and the call is stopped.
func opaAbort(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*instance)
	msg := "(no message)"
	if inst != nil && inst.opa != nil {
		if b, err := inst.opaString(uint32(stack[0])); err == nil {
			msg = clip(string(b), 1024)
		}
		inst.opa.abort = msg
	}
	panic(fmt.Errorf("opa_abort: %s", msg))
}

// opaPrintln is env.opa_println: print() in a policy, to the filter's log.
func opaPrintln(ctx context.Context, mod api.Module, stack []uint64) {
	inst, _ := ctx.Value(instKey{}).(*instance)
	if inst == nil {
		return
	}
	if b, err := inst.opaString(uint32(stack[0])); err == nil {
		inst.logs.addBytes(abi.LevelInfo, b)
	}
}

// opaBuiltinFunc is env.opa_builtinN: a builtin the policy calls back into
// the host for. A builtin that fails makes its expression undefined, as in
// OPA's non-strict evaluation; the failure goes to the filter's log.
func opaBuiltinFunc(arity int) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		inst, _ := ctx.Value(instKey{}).(*instance)
		id := int32(stack[0])
		if inst == nil || inst.opa == nil {
			panic(errors.New("opa builtin called outside a call"))
		}
		if arity == 0 && id == yieldLevel {
			inst.yield()
			stack[0] = 0
			return
		}
		if inst.f.opa == nil {
			panic(errors.New("opa builtin called outside a call"))
		}
		b, ok := inst.f.opa.builtins[id]
		if !ok || b.arity != arity {
			panic(fmt.Errorf("opa_builtin%d: unknown builtin id %d", arity, id))
		}
		args := make([]any, arity)
		for i := range arity {
			raw, err := inst.opaDump(ctx, uint32(stack[2+i]))
			if err != nil {
				panic(err)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&args[i]); err != nil {
				panic(fmt.Errorf("opa builtin %s: argument %d: %v", b.name, i+1, err))
			}
		}
		out, err := b.fn(&builtinCall{inst: inst}, args)
		if err != nil {
			inst.logs.add(abi.LevelWarn, "log", fmt.Sprintf("%s: %v (the expression is undefined)", b.name, err))
			stack[0] = 0
			return
		}
		if out == nil {
			stack[0] = 0
			return
		}
		raw, err := json.Marshal(out)
		if err != nil {
			panic(fmt.Errorf("opa builtin %s: result: %v", b.name, err))
		}
		if len(raw) > maxOPAString {
			inst.logs.add(abi.LevelWarn, "log", fmt.Sprintf("%s: its result is %s, over the %s limit (the expression is undefined)", b.name, MiB(uint64(len(raw))), MiB(maxOPAString)))
			stack[0] = 0
			return
		}
		addr, err := inst.opaParse(ctx, raw)
		if err != nil {
			panic(err)
		}
		stack[0] = uint64(addr)
	}
}

// builtinCall is what a builtin may know of the call it serves.
type builtinCall struct{ inst *instance }

// now is time.now_ns: the same for the whole evaluation, as OPA says.
func (c *builtinCall) now() int64 {
	if c.inst.opa.now == 0 {
		c.inst.opa.now = time.Now().UnixNano()
	}
	return c.inst.opa.now
}

func (c *builtinCall) log(level abi.Level, msg string) { c.inst.logs.add(level, "log", msg) }
