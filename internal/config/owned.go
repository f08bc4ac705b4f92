package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Owned blocks: a component that owns a top-level nexus.hcl block (the
// console's console { ... }) registers its option table here from its own
// package, in an init; the loader decodes the block through the table, a
// later layer's block replaces an earlier one's whole, and Owned hands the
// decoded options back to the component. The arrow points from the
// component to config, never back: config imports no component. The JSON
// formats carry the block too, as a top-level member of the same name.

// ownedBlock is a registered block: its schema and how to decode it.
type ownedBlock struct {
	schema     *hcl.BodySchema
	keys       []string // its JSON members
	decode     func(h *hclFile, c *hcl.BodyContent, name string) any
	decodeJSON func(d *dec, v *jval) any
}

var owned = map[string]*ownedBlock{}

// ownedValue is a decoded block and where it is.
type ownedValue struct {
	v   any
	src diag.Source
}

// RegisterBlock makes name a top-level nexus.hcl block, decoded into a new
// T through table. Call it from an init: the loader's schema is not
// guarded against concurrent change.
func RegisterBlock[T any](name string, table option.Table[T]) {
	if _, dup := owned[name]; dup {
		panic("config: block " + name + " registered twice")
	}
	for _, b := range topSchema.Blocks {
		if b.Type == name {
			panic("config: block " + name + " is the loader's own")
		}
	}
	owned[name] = &ownedBlock{
		schema: blockSchema(table.HCLKeys()),
		decode: func(h *hclFile, c *hcl.BodyContent, name string) any {
			o := new(T)
			for _, opt := range table {
				if a := c.Attributes[opt.HCL]; a != nil {
					// refs receives the templates of values from the
					// environment or sensitive variables: the values
					// themselves are decoded, the templates not kept.
					opt.Decode(o, hclValue{h: h, a: a, refs: map[string]Template{}, in: name})
				}
			}
			return o
		},
		keys: table.JSONKeys(),
		decodeJSON: func(d *dec, v *jval) any {
			o := new(T)
			for _, m := range v.obj {
				if opt := table.JSON(m.key); opt != nil {
					opt.Decode(o, jsonValue{d: d, v: m.val, name: m.key})
				}
			}
			return o
		},
	}
	topSchema.Blocks = append(topSchema.Blocks, hcl.BlockHeaderSchema{Type: name})
	topKeys = append(topKeys, name)
}

// owned decodes a registered block into the file's config.
func (h *hclFile) owned(b *hcl.Block, ob *ownedBlock) {
	c, ok := h.content(b, ob.schema)
	if !ok {
		return
	}
	before := len(h.errs)
	v := ob.decode(h, c, b.Type)
	if len(h.errs) == before {
		if h.out.owned == nil {
			h.out.owned = map[string]ownedValue{}
		}
		h.out.owned[b.Type] = ownedValue{v, h.blockSource(b)}
	}
}

// owned decodes a registered block's member of a JSON file.
func (j *jsonFile) owned(name string, v *jval, ob *ownedBlock) {
	d := &dec{j: j, what: name}
	if !d.keys(v, name, ob.keys) {
		return
	}
	before := len(j.errs)
	o := ob.decodeJSON(d, v)
	if len(j.errs) == before {
		if j.out.owned == nil {
			j.out.owned = map[string]ownedValue{}
		}
		j.out.owned[name] = ownedValue{o, j.at(v.off)}
	}
}

// Owned is the options a registered block (RegisterBlock) decoded to, and
// where the block is, or nil when no file has the block.
func Owned[T any](c *Config, name string) *T {
	v, _ := c.owned[name].v.(*T)
	return v
}
