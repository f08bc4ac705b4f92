package config

import (
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
	refs := map[string]Template{}
	body, ok := h.hclBlock(b, tb.Options.Shape(), refs, tb.HCLExample)
	if !ok {
		return nil
	}
	o := tb.New()
	if tb.source != nil {
		*tb.source(o) = h.blockSource(b)
	}
	if !option.Decode(tb.Options, o, body) {
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
	before := len(j.errs)
	body, ok := d.body(v, tb.Name, "", tb.Options.Shape(), tb.JSONExample)
	if !ok {
		return nil
	}
	o := tb.New()
	if tb.source != nil {
		*tb.source(o) = j.at(v.off)
	}
	if !option.Decode(tb.Options, o, body) || len(j.errs) != before {
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
	return option.Out(tb.Options, o, w)
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
