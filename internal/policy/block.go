package policy

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
	"github.com/nexus-mcp/nexus/internal/rules"
)

// The policy's config: the filter, rule and agent blocks (issue 39). Each
// is an option table here, beside the chain and the permission check that
// run what it says; the config loader reads and writes the blocks through
// the tables alone (internal/config/blocks.go), so an option of a filter,
// a rule or an agent is added here and nowhere else.

// Filter is a policy or sanitizer run as a WASM module or a plugin, or a
// CEL rule. Filters run in config order: lower layers first, each file
// top to bottom.
type Filter struct {
	Name   string
	Kind   string // "policy" (request phase) or "sanitizer" (response phase)
	WASM   string // absolute path of the module, or ""
	Plugin string // name of a plugin block, or ""
	SHA256 string
	ABI    string // ABINexus, ABIOPA, or "" to tell by the module's exports
	// Entrypoint is the rule of a Rego policy whose value decides
	// ("nexus/decision"); "" = the policy's only one.
	Entrypoint string
	// DataFile is a JSON file merged into a Rego policy's data document
	// (absolute path, or ""); the config goes over it.
	DataFile  string
	OnError   string // "deny" (fail closed, the default) or "allow" (a failing filter lets the call or result through)
	Mode      string // ModeEnforce (the default) or ModeShadow: decisions recorded as would-deny / would-modify, not enforced
	Config    map[string]any
	Match     []Match // empty: every call; else any one must match
	Limits    Limits
	Source    diag.Source
	Overrides []diag.Source
	Refs      map[string]option.Template // by JSON pointer into the filter ("/config/token")
	// Rule is set for a CEL rule (a rule block): no module, no plugin;
	// the rule decides.
	Rule *Rule
}

// Rule is a CEL rule (internal/rules): a rule block at the top level, which
// sees every agent's events, or in an agent block, which sees that
// agent's. It is compiled when the config loads, so an expression that
// does not parse or type-check is a config error at its line and column.
type Rule struct {
	When     rules.Expr
	Action   string // "deny", "allow" or "modify"
	Reason   string
	Set      []rules.Assign // modify: dotted paths into params (policy) or result (sanitizer), and their expressions
	Compiled *rules.Rule
}

// Limits bound a WASM filter; zero values mean the runtime's defaults.
type Limits struct {
	MemoryMB int
	Timeout  time.Duration
	Pool     int
}

// AgentBlock is an agent block of the config: a caller of the host with a
// permission level and the servers and tools it may use (Agent is what
// the permission check makes of it).
type AgentBlock struct {
	Name       string
	Permission string   // "yolo", "trusted" or "sandboxed"
	Servers    []string // servers it may use; empty = all
	Allow      []string // "server.tool" glob patterns
	Deny       []string
	// Mode is ModeShadow to record what the servers, allow and deny rules
	// refuse (would-deny) without enforcing it; "" or ModeEnforce enforce.
	Mode string
	// Tokens are the bearer tokens that act as this agent on the gateway's
	// HTTP listener (usually references to sensitive variables). The
	// gateway keeps only their hashes and compares in constant time.
	Tokens []string
	// Rules are the agent's CEL rules, in order: they see only its events.
	Rules []*Filter
	// Roots are what the gateway answers a server's roots/list with for
	// this agent when no client of it is asked (outside a call, or a
	// request that did not declare roots): absolute paths or URIs; empty:
	// the config's roots.
	Roots     []string
	Source    diag.Source
	Overrides []diag.Source
	Refs      map[string]option.Template // by JSON pointer into the agent ("/tokens/0")
}

// ABIs of a WASM filter: the Nexus filter ABI (sdk/filter/ABI.md) and a
// Rego policy compiled by opa build -t wasm.
const (
	ABINexus = "1"
	ABIOPA   = "opa"
)

// Modes of a filter (and of an agent's deny rules).
const (
	ModeEnforce = "enforce"
	ModeShadow  = "shadow"
)

var (
	kinds       = []string{"policy", "sanitizer"}
	onErrors    = []string{OnErrorDeny, OnErrorAllow}
	modes       = []string{ModeEnforce, ModeShadow}
	permissions = []string{"yolo", "trusted", "sandboxed"}
	ruleActions = []string{rules.Deny, rules.Allow, rules.Modify}
)

// FilterBlock is the config's filter block: filter "name" { ... } in
// nexus.hcl, an entry of the "filters" array in JSON.
var FilterBlock = option.Block[Filter]{
	Name:        "filter",
	Options:     filterOptions,
	New:         func() *Filter { return &Filter{OnError: OnErrorDeny} },
	HCLExample:  "filter \"pii\" {\n  kind = \"sanitizer\"\n  wasm = \"./filters/pii.wasm\"\n}",
	JSONExample: `{"name": "pii", "kind": "sanitizer", "wasm": "./filters/pii.wasm"}`,
	JSONName:    "filters",
	JSONList:    true,
	Check:       checkFilter,
}

// RuleBlock is the config's top-level rule block, rule "name" { ... }: a
// link of the chain like a filter (JSON writes it as a filter with a
// "rule"), which sees every agent's events.
var RuleBlock = option.Block[Filter]{
	Name:       "rule",
	Options:    ruleOptions,
	New:        newRule,
	HCLExample: "rule \"no-deletes\" {\n  when   = \"tool.name.startsWith('delete_')\"\n  action = \"deny\"\n}",
	Check: func(f *Filter, b option.Body, _ bool) {
		if ready(f) {
			compile(f, "", b)
		}
	},
}

// AgentConfigBlock is the config's agent block: agent "name" { ... } in
// nexus.hcl, a member of the "agents" object in JSON.
var AgentConfigBlock = option.Block[AgentBlock]{
	Name:        "agent",
	Options:     agentOptions,
	New:         func() *AgentBlock { return &AgentBlock{} },
	HCLExample:  "agent \"ci\" {\n  permission = \"sandboxed\"\n  servers    = [\"github\"]\n}",
	JSONExample: `{"permission": "sandboxed", "servers": ["github"]}`,
	JSONName:    "agents",
	Check:       checkAgent,
}

func newRule() *Filter { return &Filter{Kind: "policy", OnError: OnErrorDeny, Rule: &Rule{}} }

var filterOptions = option.Table[Filter]{
	label("filter", func(f *Filter) *string { return &f.Name }),
	{HCL: "kind", JSON: "kind", Required: true, Example: `"sanitizer"`,
		Decode: func(f *Filter, v option.Value) { f.Kind, _ = v.Choice(kinds) },
		Out:    func(f *Filter, _ option.Writer) any { return f.Kind }},
	{HCL: "wasm", JSON: "wasm", Example: `"./filters/pii.wasm"`,
		Decode: func(f *Filter, v option.Value) { f.WASM, _ = v.Path("") },
		Out:    func(f *Filter, _ option.Writer) any { return text(f.WASM) }},
	{HCL: "plugin", JSON: "plugin", Example: `"ratelimit"`,
		Decode: func(f *Filter, v option.Value) { f.Plugin, _ = v.String("") },
		Out:    func(f *Filter, _ option.Writer) any { return text(f.Plugin) }},
	{HCL: "sha256", JSON: "sha256", Example: `"` + strings.Repeat("ab", 32) + `"`,
		Decode: func(f *Filter, v option.Value) {
			var ok bool
			if f.SHA256, ok = v.String(""); ok {
				if p := option.CheckSHA256(f.SHA256); p != "" {
					v.Fail(p, "")
				}
			}
		},
		Out: func(f *Filter, _ option.Writer) any { return text(f.SHA256) }},
	{HCL: "abi", JSON: "abi", Example: `"opa"`,
		Decode: func(f *Filter, v option.Value) {
			var ok bool
			if f.ABI, ok = v.Scalar(); ok && f.ABI != ABINexus && f.ABI != ABIOPA {
				v.Fail(fmt.Sprintf("abi %q is not one this Nexus speaks: 1 (the Nexus filter ABI, sdk/filter/ABI.md) or \"opa\" (a Rego policy built by opa build -t wasm); leave it out and the module's exports tell", f.ABI), "")
			}
		},
		Out: func(f *Filter, _ option.Writer) any {
			if f.ABI == ABINexus {
				return 1
			}
			return text(f.ABI)
		}},
	{HCL: "entrypoint", JSON: "entrypoint", Example: `"nexus/decision"`,
		Decode: func(f *Filter, v option.Value) { f.Entrypoint, _ = v.String("") },
		Out:    func(f *Filter, _ option.Writer) any { return text(f.Entrypoint) }},
	{HCL: "data_file", JSON: "data_file", Example: `"./data.json"`,
		Decode: func(f *Filter, v option.Value) { f.DataFile, _ = v.Path("") },
		Out:    func(f *Filter, _ option.Writer) any { return text(f.DataFile) }},
	{HCL: "on_error", JSON: "on_error", Example: `"allow"`,
		Decode: func(f *Filter, v option.Value) {
			var ok bool
			if f.OnError, ok = v.String(""); !ok {
				return
			}
			if f.OnError == OnErrorPass {
				// sanitizers once took "pass"
				v.Fail(`on_error "pass" is not a value any more: use on_error = "allow", which lets a failing policy's request, or a failing sanitizer's result, go on`, "")
			} else if !slices.Contains(onErrors, f.OnError) {
				f.OnError, _ = v.Choice(onErrors)
			}
		},
		Out: func(f *Filter, _ option.Writer) any {
			if f.OnError == OnErrorDeny {
				return nil
			}
			return text(f.OnError)
		}},
	modeOption[Filter](func(f *Filter) *string { return &f.Mode }),
	{HCL: "config", JSON: "config", Example: `{"max": 3, "tools": ["a"]}`,
		Decode: func(f *Filter, v option.Value) { f.Config, _ = v.Object("/config") },
		Out: func(f *Filter, w option.Writer) any {
			if f.Config == nil {
				return nil
			}
			return w.Object("/config", f.Config)
		}},
	option.NestList("match", matchOptions, func(f *Filter, _ option.Body) *Match {
		f.Match = append(f.Match, Match{})
		return &f.Match[len(f.Match)-1]
	}, func(f *Filter) []*Match {
		out := make([]*Match, len(f.Match))
		for i := range f.Match {
			out[i] = &f.Match[i]
		}
		return out
	}, `{"servers": ["github"], "tools": ["delete_*"]}`),
	option.Nest("limits", limitsOptions, func(f *Filter) *Limits { return &f.Limits }, `{"memory_mb": 64, "timeout": "2s", "pool": 4}`),
	// A filter whose link is a CEL rule: how nexus JSON writes a rule
	// block, and a filter block may say it so too.
	{HCL: "rule", JSON: "rule", Nested: ruleBodyOptions.Shape(), Example: `{"when": "tool.name == 'rm'", "action": "deny"}`,
		Decode: func(f *Filter, v option.Value) {
			if bs, ok := v.Blocks(); ok && len(bs) == 1 {
				f.Rule = &Rule{}
				option.Decode(ruleBodyOptions, f.Rule, bs[0])
			}
		},
		Out: func(f *Filter, w option.Writer) any {
			if f.Rule == nil {
				return nil
			}
			return option.Out(ruleBodyOptions, f.Rule, w)
		}},
}

var matchOptions = option.Table[Match]{
	globs("servers", func(m *Match) *[]string { return &m.Servers }, `["github"]`),
	globs("tools", func(m *Match) *[]string { return &m.Tools }, `["delete_*"]`),
	globs("methods", func(m *Match) *[]string { return &m.Methods }, `["tools/call"]`),
}

var limitsOptions = option.Table[Limits]{
	count("memory_mb", func(l *Limits) *int { return &l.MemoryMB }, `64`),
	{HCL: "timeout", JSON: "timeout", Example: `"2s"`,
		Decode: func(l *Limits, v option.Value) { l.Timeout, _ = v.Duration() },
		Out: func(l *Limits, _ option.Writer) any {
			if l.Timeout == 0 {
				return nil
			}
			return l.Timeout.String()
		}},
	count("pool", func(l *Limits) *int { return &l.Pool }, `4`),
}

// ruleBodyOptions are what a rule says, in a rule block and in a
// filter's "rule".
var ruleBodyOptions = option.Table[Rule]{
	{HCL: "when", JSON: "when", Required: true, Example: `"tool.name.startsWith('delete_')"`,
		Decode: func(r *Rule, v option.Value) {
			if s, ok := v.String(""); ok {
				r.When = rules.Expr{Text: s, Source: v.Source()}
			}
		},
		Out: func(r *Rule, _ option.Writer) any { return r.When.Text }},
	{HCL: "action", JSON: "action", Required: true, Example: `"deny"`,
		Decode: func(r *Rule, v option.Value) { r.Action, _ = v.Choice(ruleActions) },
		Out:    func(r *Rule, _ option.Writer) any { return r.Action }},
	{HCL: "reason", JSON: "reason", Example: `"deleting needs a person"`,
		Decode: func(r *Rule, v option.Value) { r.Reason, _ = v.String("") },
		Out:    func(r *Rule, _ option.Writer) any { return text(r.Reason) }},
	{HCL: "set", JSON: "set", Example: `{"arguments.limit": "100"}`,
		Decode: func(r *Rule, v option.Value) {
			ms, ok := v.Members()
			if !ok {
				return
			}
			r.Set = []rules.Assign{}
			for _, m := range ms {
				r.Set = append(r.Set, rules.Assign{Path: m.Key, Value: rules.Expr{Text: m.Value, Source: m.Source}})
			}
		},
		Out: func(r *Rule, _ option.Writer) any {
			if len(r.Set) == 0 {
				return nil
			}
			set := map[string]any{}
			for _, a := range r.Set {
				set[a.Path] = a.Value.Text
			}
			return set
		}},
}

// ruleOptions are a rule block's: its name, kind and mode beside what the
// rule says.
var ruleOptions = append(option.Table[Filter]{
	label("rule", func(f *Filter) *string { return &f.Name }),
	{HCL: "kind", JSON: "kind", Example: `"sanitizer"`,
		Decode: func(f *Filter, v option.Value) { f.Kind, _ = v.Choice(kinds) },
		Out: func(f *Filter, _ option.Writer) any {
			if f.Kind == "policy" {
				return nil
			}
			return f.Kind
		}},
	modeOption[Filter](func(f *Filter) *string { return &f.Mode }),
}, option.Field(ruleBodyOptions, func(f *Filter) *Rule { return f.Rule })...)

var agentOptions = option.Table[AgentBlock]{
	label("agent", func(a *AgentBlock) *string { return &a.Name }),
	{HCL: "permission", JSON: "permission", Required: true, Example: `"trusted"`,
		Decode: func(a *AgentBlock, v option.Value) { a.Permission, _ = v.Choice(permissions) },
		Out:    func(a *AgentBlock, _ option.Writer) any { return a.Permission }},
	{HCL: "servers", JSON: "servers", Example: `["github"]`,
		Decode: func(a *AgentBlock, v option.Value) { a.Servers, _ = v.Strings("") },
		Out:    func(a *AgentBlock, _ option.Writer) any { return list(a.Servers) }},
	globs("allow", func(a *AgentBlock) *[]string { return &a.Allow }, `["github.get_*"]`),
	globs("deny", func(a *AgentBlock) *[]string { return &a.Deny }, `["*.delete_*"]`),
	modeOption[AgentBlock](func(a *AgentBlock) *string { return &a.Mode }),
	// Checked with the block (checkAgent), once the tokens' templates
	// are known.
	{HCL: "tokens", JSON: "tokens", Example: `["0123456789abcdef0123"]`,
		Decode: func(a *AgentBlock, v option.Value) { a.Tokens, _ = v.Strings("/tokens") },
		Out: func(a *AgentBlock, w option.Writer) any {
			if len(a.Tokens) == 0 {
				return nil
			}
			out := make([]any, len(a.Tokens))
			for i, t := range a.Tokens {
				out[i] = w.Secret("/tokens/"+strconv.Itoa(i), "token", t)
			}
			return out
		}},
	{HCL: "roots", JSON: "roots", Example: `["/srv/repo"]`,
		Decode: func(a *AgentBlock, v option.Value) {
			var ok bool
			if a.Roots, ok = v.Strings(""); ok {
				if p := checkAgentRoots(a.Roots); p != "" {
					v.Fail(p, agentRootsFix)
				}
			}
		},
		Out: func(a *AgentBlock, _ option.Writer) any {
			if len(a.Roots) == 0 {
				return nil
			}
			return a.Roots
		}},
	// rule "name" { ... } in the block; "rules": [{"name": ...}] in JSON.
	func() option.Option[AgentBlock] {
		o := option.NestList("rule", ruleOptions, func(a *AgentBlock, b option.Body) *Filter {
			f := newRule()
			f.Source = b.Source()
			a.Rules = append(a.Rules, f)
			return f
		}, func(a *AgentBlock) []*Filter { return a.Rules }, `{"name": "no-deletes", "when": "tool.name.startsWith('delete_')", "action": "deny"}`)
		o.JSON = "rules"
		return o
	}(),
}

// checkFilter says what no row of a filter can alone: its link is one
// module, plugin or rule; a rule compiles.
func checkFilter(f *Filter, b option.Body, ok bool) {
	n := 0
	for _, set := range []bool{f.WASM != "", f.Plugin != "", f.Rule != nil} {
		if set {
			n++
		}
	}
	// None set may be a row that failed to read (reported already).
	if n > 1 || n == 0 && ok {
		b.FailExample(fmt.Sprintf("filter %q needs exactly one of wasm (a module path), plugin (a plugin name) or rule (a CEL rule)", f.Name))
	}
	if (f.Entrypoint != "" || f.DataFile != "") && f.WASM == "" {
		b.Fail(fmt.Sprintf("filter %q: entrypoint and data_file are for Rego policies, which are WASM modules (wasm = \"policy.tar.gz\"), not plugins", f.Name), "")
	}
	if f.Rule != nil && n == 1 && ready(f) {
		compile(f, "", b)
	}
	if f.WASM != "" && !b.Exists(f.WASM) {
		b.Warn(fmt.Sprintf("%s does not exist (yet); the filter cannot run until it is built", f.WASM))
	}
}

// checkAgent checks the agent's tokens (knowing which came from the
// environment) and its rules' names, and compiles its rules.
func checkAgent(a *AgentBlock, b option.Body, _ bool) {
	if v := b.Get(option.Row{HCL: "tokens", JSON: "tokens"}); v != nil {
		for i := range a.Tokens {
			switch bad, isErr := checkToken(a, i, b.Lenient()); {
			case bad == "":
			case isErr:
				v.FailItem(i, bad, TokenFix(a.Name))
			default:
				v.WarnItem(i, bad)
			}
		}
	}
	first := map[string]*Filter{}
	for _, r := range a.Rules {
		if f, dup := first[r.Name]; dup {
			b.FailAt(r.Source, fmt.Sprintf("agent %q has two rules called %q (first on line %d)", a.Name, r.Name, f.Source.Line), "Rename or remove one of them.")
			continue
		}
		first[r.Name] = r
		if ready(r) {
			compile(r, a.Name, b)
		}
	}
}

// ready says whether a rule's parts read well enough to compile: a kind
// or action outside the known ones is reported already, and compiling
// would report it again.
func ready(f *Filter) bool {
	return f.Rule.When.Text != "" && slices.Contains(kinds, f.Kind) && slices.Contains(ruleActions, f.Rule.Action)
}

// RuleFix points at the reference of rule expressions.
const RuleFix = "A rule's expressions are CEL (https://cel.dev) over the variables phase, method, agent (id, permission), server (name, info), tool (name, annotations), args, params, result, uri and prompt."

// compile compiles f's rule (agent's, or "" for one that sees every
// agent's events), reporting each problem where it is written.
func compile(f *Filter, agent string, b option.Body) {
	r := f.Rule
	compiled, err := rules.Compile(rules.Spec{Name: f.Name, Agent: agent, Kind: f.Kind, When: r.When, Action: r.Action,
		Reason: r.Reason, Set: r.Set, Source: f.Source})
	var ce *rules.CompileError
	switch {
	case errors.As(err, &ce):
		for _, p := range ce.Problems {
			b.FailAt(p.Source, fmt.Sprintf("rule %q: %s: %s", f.Name, p.Expr, p.Message), RuleFix)
		}
	case err != nil:
		b.FailAt(f.Source, err.Error(), RuleFix)
	default:
		r.Compiled = compiled
	}
}

// label is the row naming a block of kind what.
func label[T any](what string, field func(*T) *string) option.Option[T] {
	return option.Option[T]{HCL: "name", JSON: "name", Label: true, Required: true, Example: `"pii"`,
		Decode: func(o *T, v option.Value) {
			var ok bool
			if *field(o), ok = v.String(""); ok {
				if p := option.CheckName(what, *field(o)); p != "" {
					v.Fail(p, option.NameRule)
				}
			}
		},
		Out: func(o *T, _ option.Writer) any { return *field(o) }}
}

func modeOption[T any](field func(*T) *string) option.Option[T] {
	return option.Option[T]{HCL: "mode", JSON: "mode", Example: `"shadow"`,
		Decode: func(o *T, v option.Value) { *field(o), _ = v.Choice(modes) },
		Out:    func(o *T, _ option.Writer) any { return text(*field(o)) }}
}

// globs is a list of glob patterns (servers, tools, "server.tool").
func globs[T any](name string, field func(*T) *[]string, example string) option.Option[T] {
	return option.Option[T]{HCL: name, JSON: name, Example: example,
		Decode: func(o *T, v option.Value) {
			var ok bool
			if *field(o), ok = v.Strings(""); ok {
				for _, p := range *field(o) {
					if _, err := path.Match(p, ""); err != nil || p == "" {
						v.Fail(fmt.Sprintf("%s: %q is not a valid glob pattern (use *, ? and [a-z])", name, p), "")
						return
					}
				}
			}
		},
		Out: func(o *T, _ option.Writer) any { return list(*field(o)) }}
}

// count is a whole number of at least 1; 0 (unset) is the default.
func count[T any](name string, field func(*T) *int, example string) option.Option[T] {
	return option.Option[T]{HCL: name, JSON: name, Example: example,
		Decode: func(o *T, v option.Value) { *field(o), _ = v.Int(1) },
		Out: func(o *T, _ option.Writer) any {
			if *field(o) == 0 {
				return nil
			}
			return *field(o)
		}}
}

// text is a string option's Out: left out when unset.
func text(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// list is a list option's Out: left out when unset, kept when empty.
func list(v []string) any {
	if v == nil {
		return nil
	}
	return v
}

// minTokenLen is the length under which a bearer token earns a warning:
// a short one can be guessed by a client that tries many.
const minTokenLen = 16

// checkToken says what is wrong with agent a's token i: an error (an
// empty token would let an empty bearer in) or a warning (written into
// the file, or short). lenient: an empty token from a reference is a
// variable not set in this environment, which show and compile allow.
func checkToken(a *AgentBlock, i int, lenient bool) (problem string, isErr bool) {
	t := a.Tokens[i]
	ref, fromRef := a.Refs["/tokens/"+strconv.Itoa(i)]
	switch {
	case t == "" && fromRef && lenient:
		return "", false
	case t == "" && fromRef:
		return fmt.Sprintf("agent %q's token %d is empty (%s is empty in this environment)", a.Name, i+1, ref), true
	case t == "":
		return fmt.Sprintf("agent %q's token %d is empty", a.Name, i+1), true
	case !fromRef:
		return fmt.Sprintf("token %d is written in the config file; put it in a sensitive variable (tokens = [var.%s_token]) so the file can be shared and compiled configs never hold it", i+1, varName(a.Name)), false
	case len(t) < minTokenLen:
		return fmt.Sprintf("token %d (%s) is %d characters long, short enough to guess; use at least %d random characters (openssl rand -hex 32)", i+1, ref, len(t), minTokenLen), false
	}
	return "", false
}

// TokenFix is the fix of a token that must not be as it is.
func TokenFix(agent string) string {
	return fmt.Sprintf("Give the agent a long random token from a sensitive variable:\nvariable %q {\n  sensitive = true\n}\nand tokens = [var.%s] in agent %q.", varName(agent)+"_token", varName(agent)+"_token", agent)
}

// varName makes an agent name usable in a variable name.
func varName(name string) string { return strings.ReplaceAll(name, "-", "_") }

const agentRootsFix = `Write absolute paths or URIs, for example roots = ["/srv/repo", "https://git.example.com/repo"].`

// checkAgentRoots says what is wrong with an agent's roots: each is an
// absolute path or a URI (scheme://...).
func checkAgentRoots(roots []string) string {
	for _, r := range roots {
		if strings.Contains(r, "://") {
			if u, err := url.Parse(r); err != nil || u.Scheme == "" {
				return fmt.Sprintf("root %q is not a URI", r)
			}
			continue
		}
		if !strings.HasPrefix(r, "/") {
			return fmt.Sprintf("root %q is neither an absolute path nor a URI (servers are given roots as file:// URIs of absolute paths)", r)
		}
	}
	return ""
}
