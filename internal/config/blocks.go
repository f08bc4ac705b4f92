package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/option"
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
	schema := &hcl.BodySchema{}
	for _, o := range tb.Options {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: o.HCL, Required: o.Required})
	}
	c, ok := h.content(b, schema)
	if !ok {
		return nil
	}
	o := tb.New()
	if tb.source != nil {
		*tb.source(o) = h.blockSource(b)
	}
	refs := map[string]Template{}
	before := len(h.errs)
	for _, opt := range tb.Options {
		if a := c.Attributes[opt.HCL]; a != nil {
			opt.Decode(o, hclValue{h: h, a: a, refs: refs, in: tb.Name, ex: tb.HCLExample})
		}
	}
	if len(h.errs) != before {
		return nil
	}
	if tb.refs != nil && len(refs) > 0 {
		*tb.refs(o) = refs
	}
	return o
}

// json decodes the block's member of a JSON file, or returns nil when it
// has an error (reported). Unknown members warn, as everywhere in JSON.
func (tb tableBlock[T]) json(j *jsonFile, v *jval) *T {
	d := &dec{j: j, what: tb.Name}
	if v.kind != '{' {
		d.typeErr(v, tb.Name, "an object", tb.JSONExample)
		return nil
	}
	if !d.keys(v, tb.Name, tb.Options.JSONKeys()) {
		return nil
	}
	o := tb.New()
	if tb.source != nil {
		*tb.source(o) = j.at(v.off)
	}
	before := len(j.errs)
	for _, m := range v.obj {
		if opt := tb.Options.JSON(m.key); opt != nil {
			opt.Decode(o, jsonValue{d: d, v: m.val, name: m.key, ex: tb.JSONExample})
		}
	}
	for _, opt := range tb.Options {
		if opt.Required && v.get(opt.JSON) == nil {
			d.errAt(v, fmt.Sprintf("%s needs %q", tb.Name, opt.JSON), tb.JSONExample)
		}
	}
	if len(j.errs) != before {
		return nil
	}
	if tb.refs != nil && len(d.refs) > 0 {
		*tb.refs(o) = d.refs
	}
	return o
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
	e := map[string]any{}
	for _, opt := range tb.Options {
		if v := opt.Out(o, w); v != nil {
			e[opt.JSON] = v
		}
	}
	return e
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

var auditBlock = tableBlock[Audit]{Block: audit.ConfigBlock, source: func(a *Audit) *diag.Source { return &a.Source },
	refs: func(a *Audit) *map[string]Template { return &a.Refs }}
