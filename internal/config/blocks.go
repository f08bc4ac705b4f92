package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/diag"
	gwblock "github.com/nexus-mcp/nexus/internal/gateway/block"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/option"
	"github.com/nexus-mcp/nexus/internal/plugin/block"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/sampling"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// Top-level blocks a component owns (issue 39): the component keeps its
// block (option.Block: its name, option table, defaults and examples)
// beside its code, and here both formats meet it. Each such block is at
// most one per file, in nexus.hcl as a block and in JSON as a member of
// the top-level object, and a later layer's replaces an earlier one's
// whole. The loader adds only where the block's origin and templates are
// kept; adding an option touches only the owner's table.

// tableBlock is a top-level block decoded through its owner's table.
type tableBlock[T any] struct {
	option.Block[T]
	// source is where the block's origin is kept in T, or nil for a
	// block registered by a component (owned.go), kept beside it.
	source func(*T) *diag.Source
	// refs is where the templates of the block's values are kept, by JSON
	// pointer ("/api_key"), or nil for a block whose options take none.
	refs func(*T) *map[string]Template
}

// hcl decodes b, or returns nil when it has an error (reported).
func (tb tableBlock[T]) hcl(h *hclFile, b *hcl.Block) *T {
	before := len(h.errs)
	refs := map[string]Template{}
	body, ok := h.hclBlock(b, tb.Options.Shape(), refs, tb.HCLExample)
	if !ok {
		return nil
	}
	o := tb.New()
	if tb.source != nil {
		*tb.source(o) = h.blockSource(b)
	}
	return tb.decode(o, body, func() map[string]Template { return refs }, func() bool { return len(h.errs) == before })
}

// decode reads o's rows from body, keeps the templates found (refs) and
// runs the block's Check; refs gives them once read, clean says whether the file has no new error.
func (tb tableBlock[T]) decode(o *T, body option.Body, refs func() map[string]Template, clean func() bool) *T {
	if !option.DecodeLabels(tb.Options, o, body) {
		return nil
	}
	ok := option.DecodeRows(tb.Options, o, body)
	if r := refs(); tb.refs != nil && len(r) > 0 {
		*tb.refs(o) = r
	}
	if tb.Check != nil {
		tb.Check(o, body, ok)
	}
	if !clean() {
		return nil
	}
	return o
}

// json decodes the block's member of a JSON file, or returns nil when it
// has an error (reported). Unknown members warn, as everywhere in JSON.
func (tb tableBlock[T]) json(j *jsonFile, v *jval) *T {
	return tb.jsonEntry(&dec{j: j, what: tb.Name}, v, tb.Name, nil)
}

// jsonEntry decodes one block from v, an object; field names it in
// messages, and label is its key in an object of blocks by name.
func (tb tableBlock[T]) jsonEntry(d *dec, v *jval, field string, label *jval) *T {
	j := d.j
	before := len(j.errs)
	body, ok := d.body(v, field, "", tb.Options.Shape(), tb.JSONExample, tb.JSONExample, label != nil)
	if !ok {
		return nil
	}
	body.label = label
	o := tb.New()
	if tb.source != nil {
		at := v.off
		if label != nil {
			at = label.off
		}
		*tb.source(o) = j.at(at)
	}
	return tb.decode(o, body, func() map[string]Template { return d.refs }, func() bool { return len(j.errs) == before })
}

// labelRow is the row that names the block, or nil for a block that is
// written once.
func (tb tableBlock[T]) labelRow() *option.Option[T] {
	for i := range tb.Options {
		if tb.Options[i].Label {
			return &tb.Options[i]
		}
	}
	return nil
}

// jsonName is the block's member of a JSON file's top-level object.
func (tb tableBlock[T]) jsonName() string {
	if tb.JSONName != "" {
		return tb.JSONName
	}
	return tb.Name
}

// jsonAll decodes the member holding a named block's entries: an array in
// the order written (JSONList), else an object by name. An entry with an
// error is left out (and reported).
func (tb tableBlock[T]) jsonAll(j *jsonFile, v *jval) []*T {
	name, key := tb.jsonName(), tb.labelRow().JSON
	var out []*T
	seen := map[string]bool{}
	add := func(label string, at, entry *jval, byName bool) {
		if seen[label] {
			j.errAt(at.off, len(label)+2, "", fmt.Sprintf("%s %q is defined twice in this file", tb.Name, label))
			return
		}
		seen[label] = true
		what := subject(tb.Name, label)
		if entry.kind != '{' {
			j.errAt(entry.off, 1, "", fmt.Sprintf("%s must be an object, found %s", what, entry.kindName()), "Expected, for example: "+tb.JSONExample)
			return
		}
		d := &dec{j: j, who: label, what: tb.Name}
		var l *jval
		if byName {
			l = at
		}
		if o := tb.jsonEntry(d, entry, what, l); o != nil {
			out = append(out, o)
		}
	}
	if tb.JSONList {
		if v.kind != '[' {
			(&dec{j: j}).typeErr(v, name, "an array of "+name+", in the order they run", "["+tb.JSONExample+"]")
			return nil
		}
		for i, e := range v.arr {
			n := e.get(key)
			if e.kind != '{' || n == nil || n.kind != '"' {
				j.errAt(e.off, 1, "", fmt.Sprintf("%s %d has no %q", tb.Name, i, key), "Expected, for example: "+tb.JSONExample)
				continue
			}
			add(n.str, n, e, false)
		}
		return out
	}
	if v.kind != '{' {
		(&dec{j: j}).typeErr(v, name, "an object of "+name+" by name", fmt.Sprintf(`{"example": %s}`, tb.JSONExample))
		return nil
	}
	for _, m := range v.obj {
		add(m.key, &jval{kind: '"', off: m.off, str: m.key}, m.val, true)
	}
	return out
}

// out is the block in the nexus-json form: its options that are set.
func (tb tableBlock[T]) out(c *compiler, o *T) map[string]any {
	w := jsonWriter{c: c, block: tb.Name}
	if tb.source != nil {
		w.src = *tb.source(o)
	}
	if tb.refs != nil {
		w.refs = *tb.refs(o)
	}
	if l := tb.labelRow(); l != nil {
		w.subj = subject(tb.Name, l.Out(o, w).(string))
		c.cur = w.subj
		defer func() { c.cur = "" }()
	}
	return option.Out(tb.Options, o, w)
}

// outAll is a named block's entries in the nexus-json form: an array, or
// an object by name.
func (tb tableBlock[T]) outAll(c *compiler, items []*T) any {
	if tb.JSONList {
		out := make([]any, len(items))
		for i, o := range items {
			out[i] = tb.out(c, o)
		}
		return out
	}
	key := tb.labelRow().JSON
	out := map[string]any{}
	for _, o := range items {
		e := tb.out(c, o)
		name, _ := e[key].(string)
		delete(e, key)
		out[name] = e
	}
	return out
}

// LockPolicy is the lock block (internal/lock owns it and its options).
type LockPolicy = lock.Policy

// Values of LockPolicy's fields.
const (
	LockBlock = lock.Block
	LockWarn  = lock.Warn
)

var lockBlock = tableBlock[LockPolicy]{Block: lock.ConfigBlock, source: func(p *LockPolicy) *diag.Source { return &p.Source }}

// Telemetry is the telemetry block (internal/telemetry owns it and its
// options).
type Telemetry = telemetry.Block

var telemetryBlock = tableBlock[Telemetry]{Block: telemetry.ConfigBlock, source: func(t *Telemetry) *diag.Source { return &t.Source }}

// Sampling is the sampling block (internal/sampling owns it and its
// options).
type Sampling = sampling.Block

// Defaults of a sampling block.
const (
	DefaultSamplingMaxTokens = sampling.DefaultMaxTokens
	DefaultSamplingPerMinute = sampling.DefaultPerMinute
	DefaultSamplingTimeout   = sampling.DefaultTimeout
)

var samplingBlock = tableBlock[Sampling]{Block: sampling.ConfigBlock, source: func(s *Sampling) *diag.Source { return &s.Source },
	refs: func(s *Sampling) *map[string]Template { return &s.Refs }}

// Audit is the audit block (internal/audit owns it and its options).
type Audit = audit.Block

// The filter, rule and agent blocks (internal/policy owns them and their
// options). A rule block is a filter whose link is a CEL rule: JSON has
// no member of its own for it.
var (
	filterBlock = tableBlock[Filter]{Block: policy.FilterBlock, source: func(f *Filter) *diag.Source { return &f.Source },
		refs: func(f *Filter) *map[string]Template { return &f.Refs }}
	ruleBlock = tableBlock[Filter]{Block: policy.RuleBlock, source: func(f *Filter) *diag.Source { return &f.Source },
		refs: func(f *Filter) *map[string]Template { return &f.Refs }}
	agentBlock = tableBlock[Agent]{Block: policy.AgentConfigBlock, source: func(a *Agent) *diag.Source { return &a.Source },
		refs: func(a *Agent) *map[string]Template { return &a.Refs }}
)

var pluginBlock = tableBlock[Plugin]{Block: block.Config, source: func(p *Plugin) *diag.Source { return &p.Source }}

var auditBlock = tableBlock[Audit]{Block: audit.ConfigBlock, source: func(a *Audit) *diag.Source { return &a.Source },
	refs: func(a *Audit) *map[string]Template { return &a.Refs }}

var gatewayBlock = tableBlock[Gateway]{Block: gwblock.Config, source: func(g *Gateway) *diag.Source { return &g.Source },
	refs: func(g *Gateway) *map[string]Template { return &g.Refs }}
