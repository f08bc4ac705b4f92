package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Limits of a rule.
const (
	// DefaultMaxCost bounds one evaluation of a rule's expressions, in
	// CEL's cost units (about one per operation, one per element a
	// comprehension visits): far above any one-liner, far below a runaway
	// loop over a large argument.
	DefaultMaxCost = 100_000
	// MaxExprLen bounds an expression's text.
	MaxExprLen = 4 << 10
	// MaxAssigns bounds a modify rule's set entries.
	MaxAssigns = 32
	// MaxOutput bounds the params or result a modify rule writes.
	MaxOutput = 4 << 20
)

// Actions of a rule.
const (
	Deny   = "deny"
	Allow  = "allow"
	Modify = "modify"
)

// Expr is a CEL expression as written in a config file.
type Expr struct {
	Text string
	// Source is where its first character is in the config file (inside
	// the quotes), so a problem CEL finds at line 1, column 7 of the
	// expression is reported where it is in the file.
	Source diag.Source
}

// Assign sets one field to an expression's value (action "modify").
type Assign struct {
	// Path is dotted, into the request's params for a policy
	// ("arguments.limit") and into the response's result for a sanitizer
	// ("structuredContent.total", "isError"); missing objects on the way
	// are made.
	Path  string
	Value Expr
}

// Spec is a rule as the config gives it.
type Spec struct {
	Name    string
	Agent   string // "" = every agent's events; else only this agent's (a rule written in an agent block)
	Kind    string // "policy" (the request phase; "" means policy) or "sanitizer" (the response phase)
	When    Expr   // a bool expression: the rule acts when it is true
	Action  string // Deny, Allow or Modify
	Reason  string // why, shown to the caller on deny
	Set     []Assign
	MaxCost uint64 // per evaluation; 0 = DefaultMaxCost
	Source  diag.Source
}

// Problem is a compile error located in the config file.
type Problem struct {
	Source  diag.Source
	Expr    string // which expression: "when" or "set[arguments.limit]"
	Message string
}

// CompileError lists what is wrong with a rule's expressions.
type CompileError struct {
	Rule     string
	Problems []Problem
}

func (e *CompileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rule %q does not compile:", e.Rule)
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s: %s: %s", p.Source, p.Expr, p.Message)
	}
	return b.String()
}

var (
	envOnce sync.Once
	env     *cel.Env
	envErr  error
)

// theEnv is the one CEL environment every rule compiles in: building it
// takes milliseconds, so it is built once.
func theEnv() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := []cel.EnvOption{
			ext.NativeTypes(append(nativeTypes, ext.ParseStructTags(true))...),
			cel.CrossTypeNumericComparisons(true),
			cel.OptionalTypes(), ext.Strings(), ext.Lists(), ext.Sets(), ext.Math(), ext.Regex(),
			cel.Variable("phase", cel.StringType),
			cel.Variable("method", cel.StringType),
			cel.Variable("agent", cel.ObjectType("rules.Agent")),
			cel.Variable("server", cel.ObjectType("rules.Server")),
			cel.Variable("tool", cel.ObjectType("rules.Tool")),
			cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("params", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("result", cel.MapType(cel.StringType, cel.DynType)),
			cel.Variable("uri", cel.StringType),
			cel.Variable("prompt", cel.StringType),
		}
		env, envErr = cel.NewEnv(opts...)
	})
	return env, envErr
}

// Rule is a compiled rule: a policy.Link (Name and Handle).
type Rule struct {
	spec  Spec
	when  *program
	set   []assign
	needs needs // what of the event its expressions read
}

type assign struct {
	path []string
	prg  *program
	expr string
	src  diag.Source
}

// needs says which variables are worth building: decoding params or a
// result costs more than evaluating a rule about a tool's name.
type needs struct{ args, params, result, uri, prompt bool }

// Compile checks a rule and compiles its expressions. A rule whose
// expressions do not parse or type-check gets a *CompileError with every
// problem located in the config file.
func Compile(s Spec) (*Rule, error) {
	if s.Kind == "" {
		s.Kind = "policy"
	}
	if s.MaxCost == 0 {
		s.MaxCost = DefaultMaxCost
	}
	if err := checkSpec(s); err != nil {
		return nil, err
	}
	e, err := theEnv()
	if err != nil {
		return nil, fmt.Errorf("rules: the CEL environment: %w", err)
	}
	r := &Rule{spec: s}
	ce := &CompileError{Rule: s.Name}
	var n needs
	r.when = compileExpr(e, s.When, "when", cel.BoolType, s.MaxCost, ce, &n)
	for _, a := range s.Set {
		prg := compileExpr(e, a.Value, "set["+a.Path+"]", nil, s.MaxCost, ce, &n)
		r.set = append(r.set, assign{path: strings.Split(a.Path, "."), prg: prg, expr: a.Value.Text, src: a.Value.Source})
	}
	if len(ce.Problems) > 0 {
		return nil, ce
	}
	r.needs = n
	return r, nil
}

func checkSpec(s Spec) error {
	switch {
	case s.Kind != "policy" && s.Kind != "sanitizer":
		return fmt.Errorf("rule %q: kind %q is not one of policy, sanitizer", s.Name, s.Kind)
	case s.Action != Deny && s.Action != Allow && s.Action != Modify:
		return fmt.Errorf("rule %q: action %q is not one of deny, allow, modify", s.Name, s.Action)
	case s.When.Text == "":
		return fmt.Errorf("rule %q needs when: the expression that says when it acts", s.Name)
	case s.Action == Modify && len(s.Set) == 0:
		return fmt.Errorf("rule %q: action modify needs set: the fields it changes and their new values", s.Name)
	case s.Action != Modify && len(s.Set) > 0:
		return fmt.Errorf("rule %q: set is only for action modify", s.Name)
	case len(s.Set) > MaxAssigns:
		return fmt.Errorf("rule %q sets %d fields; a rule may set at most %d", s.Name, len(s.Set), MaxAssigns)
	}
	for _, a := range s.Set {
		if a.Path == "" || strings.HasPrefix(a.Path, ".") || strings.HasSuffix(a.Path, ".") || strings.Contains(a.Path, "..") {
			return fmt.Errorf("rule %q: set path %q is not a dotted path (arguments.limit)", s.Name, a.Path)
		}
		if s.Kind == "sanitizer" && strings.HasPrefix(a.Path, "arguments.") {
			return fmt.Errorf("rule %q: a sanitizer sets fields of the result; %q is a request's argument (kind = \"policy\" changes those)", s.Name, a.Path)
		}
	}
	return nil
}

// compileExpr parses and checks one expression; problems go to ce.
func compileExpr(e *cel.Env, x Expr, what string, want *cel.Type, maxCost uint64, ce *CompileError, n *needs) *program {
	if len(x.Text) > MaxExprLen {
		ce.Problems = append(ce.Problems, Problem{x.Source, what, fmt.Sprintf("the expression is %d bytes; the limit is %d", len(x.Text), MaxExprLen)})
		return nil
	}
	ast, iss := e.Compile(x.Text)
	if iss.Err() != nil {
		for _, er := range iss.Errors() {
			ce.Problems = append(ce.Problems, Problem{locate(x, er.Location.Line(), er.Location.Column()), what, er.Message})
		}
		return nil
	}
	if want != nil && !ast.OutputType().IsExactType(want) && ast.OutputType() != cel.DynType {
		ce.Problems = append(ce.Problems, Problem{x.Source, what, fmt.Sprintf("the expression is %s; %s must be %s (a comparison, a has(), a startsWith(), ...)", ast.OutputType(), what, want)})
		return nil
	}
	for _, ref := range ast.NativeRep().ReferenceMap() {
		switch ref.Name {
		case "args":
			n.args = true
		case "params":
			n.params = true
		case "result":
			n.result = true
		case "uri":
			n.uri = true
		case "prompt":
			n.prompt = true
		}
	}
	// An expression whose worst case CEL can bound at compile time within
	// the limit (no comprehension over an argument, no regex on a value
	// of unknown size) can never reach the limit: it runs without the
	// per-operation cost tracking and context checks, which would
	// otherwise cost more than the expression itself.
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	est, err := e.EstimateCost(ast, unsized{})
	bounded := err == nil && est.Max <= maxCost
	if !bounded {
		opts = append(opts, cel.CostLimit(maxCost), cel.InterruptCheckFrequency(100))
	}
	prg, err := e.Program(ast, opts...)
	if err != nil {
		ce.Problems = append(ce.Problems, Problem{x.Source, what, err.Error()})
		return nil
	}
	return &program{Program: prg, bounded: bounded}
}

// program is a compiled expression.
type program struct {
	cel.Program
	bounded bool // its cost is bounded within the limit at compile time
}

func (p *program) eval(ctx context.Context, act *activation) (ref.Val, error) {
	if p.bounded {
		out, _, err := p.Eval(act)
		return out, err
	}
	out, _, err := p.ContextEval(ctx, act)
	return out, err
}

// unsized leaves every size unknown: only what the expression itself
// bounds (literals, fixed-size operations) bounds its cost.
type unsized struct{}

func (unsized) EstimateSize(cost.AstNode) *cost.SizeEstimate { return nil }

func (unsized) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// locate turns CEL's line (1-based) and column (0-based) in the
// expression into a place in the config file.
func locate(x Expr, line, col int) diag.Source {
	s := x.Source
	if s.Line == 0 || line < 1 {
		return s
	}
	if line == 1 {
		s.Column += col
		return s
	}
	s.Line += line - 1
	s.Column = col + 1
	return s
}

// Name is the rule's name.
func (r *Rule) Name() string { return r.spec.Name }

// Kind is "policy" or "sanitizer".
func (r *Rule) Kind() string { return r.spec.Kind }

// Spec is the rule as written.
func (r *Rule) Spec() Spec { return r.spec }

// Handle decides one event: it implements policy.Link. A rule ignores
// (allows) the events of other agents and of the other phase.
func (r *Rule) Handle(ctx context.Context, e *event.Event) (event.Decision, error) {
	if r.spec.Agent != "" && e.Agent.ID != r.spec.Agent {
		return event.Decision{Action: event.Allow}, nil
	}
	if (r.spec.Kind == "sanitizer") != (e.Phase == event.PhaseResponse) {
		return event.Decision{Action: event.Allow}, nil
	}
	act, err := r.activation(e)
	if err != nil {
		return event.Decision{}, err
	}
	defer act.release()
	out, err := r.when.eval(ctx, act)
	if err != nil {
		if e.Method == "tools/list" && (r.needs.args || r.needs.params) && ctx.Err() == nil {
			// A listing has no arguments: a rule about them judges the
			// call, not whether the tool is listed.
			return event.Decision{Action: event.Allow}, nil
		}
		return event.Decision{}, r.evalError(ctx, "when", r.spec.When.Text, r.spec.When.Source, err)
	}
	hit, ok := out.(types.Bool)
	if !ok {
		return event.Decision{}, fmt.Errorf("rule %q (%s): when gave %s, not a bool", r.spec.Name, r.spec.When.Source, out.Type())
	}
	if !hit {
		return event.Decision{Action: event.Allow}, nil
	}
	switch r.spec.Action {
	case Deny:
		reason := r.spec.Reason
		if reason == "" {
			reason = fmt.Sprintf("denied by rule %q", r.spec.Name)
		}
		return event.Decision{Action: event.Deny, Reason: reason}, nil
	case Allow:
		return event.Decision{Action: event.Allow}, nil
	}
	return r.modify(ctx, e, act)
}

// modify evaluates the set expressions and writes their values into a
// copy of the params (policy) or result (sanitizer).
func (r *Rule) modify(ctx context.Context, e *event.Event, act *activation) (event.Decision, error) {
	raw, what := e.Params, "params"
	if r.spec.Kind == "sanitizer" {
		raw, what = e.Result, "result"
	}
	doc := map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &doc); err != nil {
			return event.Decision{}, fmt.Errorf("rule %q: the event's %s is not a JSON object: %v", r.spec.Name, what, err)
		}
	}
	for _, a := range r.set {
		v, err := a.prg.eval(ctx, act)
		if err != nil {
			return event.Decision{}, r.evalError(ctx, "set["+strings.Join(a.path, ".")+"]", a.expr, a.src, err)
		}
		val, err := native(v, 0)
		if err != nil {
			return event.Decision{}, fmt.Errorf("rule %q (%s): set[%s]: %v", r.spec.Name, a.src, strings.Join(a.path, "."), err)
		}
		if err := put(doc, a.path, val); err != nil {
			return event.Decision{}, fmt.Errorf("rule %q: set[%s]: %v", r.spec.Name, strings.Join(a.path, "."), err)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return event.Decision{}, fmt.Errorf("rule %q: the new %s do not encode: %v", r.spec.Name, what, err)
	}
	if len(out) > MaxOutput {
		return event.Decision{}, fmt.Errorf("rule %q: the new %s are %d bytes, over the %d limit", r.spec.Name, what, len(out), MaxOutput)
	}
	d := event.Decision{Action: event.Modify, Reason: r.spec.Reason}
	if r.spec.Kind == "sanitizer" {
		d.Result = out
	} else {
		d.Params = out
	}
	return d, nil
}

// put sets path in doc, making objects on the way.
func put(doc map[string]any, path []string, v any) error {
	for i, k := range path[:len(path)-1] {
		next, ok := doc[k]
		if !ok || next == nil {
			m := map[string]any{}
			doc[k] = m
			doc = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object, so %s cannot be set in it", strings.Join(path[:i+1], "."), path[i+1])
		}
		doc = m
	}
	doc[path[len(path)-1]] = v
	return nil
}

// maxDepth bounds the values a set expression may build.
const maxDepth = 64

// native turns a CEL value into what encoding/json writes.
func native(v ref.Val, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("the value nests deeper than 64 levels")
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return int64(x), nil
	case types.Uint:
		return uint64(x), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", f)
		}
		return f, nil
	case types.String:
		return string(x), nil
	case traits.Mapper:
		out := map[string]any{}
		it := x.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key %v is not a string", k)
			}
			val, err := native(x.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = val
		}
		return out, nil
	case traits.Lister:
		var out []any
		it := x.Iterator()
		for it.HasNext() == types.True {
			val, err := native(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s cannot go into JSON", v.Type())
}

// evalError says what failed, where, and what usually fixes it.
func (r *Rule) evalError(ctx context.Context, what, text string, src diag.Source, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("rule %q: %s: %w", r.spec.Name, what, ctx.Err())
	}
	msg := err.Error()
	hint := ""
	switch {
	case strings.Contains(msg, "no such key"):
		hint = "; test for the field first: has(args.x) && args.x > 1"
	case strings.Contains(msg, "cost limit"):
		hint = fmt.Sprintf("; the rule may spend %d units an evaluation (a comprehension over a large argument?)", r.spec.MaxCost)
	case strings.Contains(msg, "no such overload"):
		hint = "; a value has another type than the expression expects (an argument given as a string?), convert it: int(args.n)"
	}
	return fmt.Errorf("rule %q (%s): %s = %q failed: %s%s", r.spec.Name, src, what, text, msg, hint)
}

// activation holds one event's variables, built as far as the rule
// needs them. Names resolve through a switch, and the typed objects are
// handed to CEL by pointer, so building it is one allocation.
type activation struct {
	e                    *event.Event
	agent                Agent
	server               Server
	tool                 Tool
	args, params, result map[string]any
	uri, prompt          string
}

// Activations are reused: one per evaluated event would be most of what
// a rule allocates. Nothing CEL returns refers to one (a modify rule's
// values are copied out before Handle returns).
var activations = sync.Pool{New: func() any { return new(activation) }}

func (a *activation) release() {
	*a = activation{}
	activations.Put(a)
}

// empty stands for an absent map; CEL never writes to it.
var empty = map[string]any{}

// ResolveName implements interpreter.Activation.
func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "phase":
		return a.e.Phase, true
	case "method":
		return a.e.Method, true
	case "agent":
		return &a.agent, true
	case "server":
		return &a.server, true
	case "tool":
		return &a.tool, true
	case "args":
		return a.args, true
	case "params":
		return a.params, true
	case "result":
		return a.result, true
	case "uri":
		return a.uri, true
	case "prompt":
		return a.prompt, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *activation) Parent() interpreter.Activation { return nil }

func (r *Rule) activation(e *event.Event) (*activation, error) {
	a := activations.Get().(*activation)
	*a = activation{e: e, agent: Agent{ID: e.Agent.ID, Permission: e.Agent.Permission}, server: Server{Name: e.Server.Name},
		tool: toolOf(e.Tool), args: empty, params: empty, result: empty}
	if e.Server.Info != nil {
		a.server.Info = Info{Name: e.Server.Info.Name, Version: e.Server.Info.Version}
	}
	if (r.needs.args || r.needs.params || r.needs.uri || r.needs.prompt) && len(bytes.TrimSpace(e.Params)) > 0 {
		if err := decode(e.Params, &a.params); err != nil {
			return nil, fmt.Errorf("rule %q: the event's params: %v", r.spec.Name, err)
		}
		if args, ok := a.params["arguments"].(map[string]any); ok {
			a.args = args
		}
		switch e.Method {
		case "resources/read":
			a.uri, _ = a.params["uri"].(string)
		case "prompts/get":
			a.prompt, _ = a.params["name"].(string)
		}
	}
	if r.needs.result && len(bytes.TrimSpace(e.Result)) > 0 {
		if err := decode(e.Result, &a.result); err != nil {
			return nil, fmt.Errorf("rule %q: the event's result: %v", r.spec.Name, err)
		}
	}
	return a, nil
}

// decode reads a JSON object with integers as int64, so `args.n == 3`
// compares ints.
func decode(raw []byte, into *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*into = numbers(m).(map[string]any)
	return nil
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
		return x
	}
	return v
}
