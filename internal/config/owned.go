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

// ownedBlock is a registered block: how each format decodes it, to nil
// when it has an error (reported).
type ownedBlock struct {
	hcl  func(h *hclFile, b *hcl.Block) any
	json func(j *jsonFile, v *jval) any
}

var owned = map[string]*ownedBlock{}

// ownedValue is a decoded block and where it is.
type ownedValue struct {
	v   any
	src diag.Source
}

// RegisterBlock makes name a top-level block of nexus.hcl and the JSON
// formats, decoded into a new T through table (as the loader's own blocks
// are, blocks.go). Call it from an init: the loader's schema is not
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
	tb := tableBlock[T]{Block: option.Block[T]{Name: name, Options: table, New: func() *T { return new(T) }}}
	some := func(o *T) any {
		if o == nil {
			return nil // not a typed nil in an any
		}
		return o
	}
	owned[name] = &ownedBlock{
		hcl:  func(h *hclFile, b *hcl.Block) any { return some(tb.hcl(h, b)) },
		json: func(j *jsonFile, v *jval) any { return some(tb.json(j, v)) },
	}
	topSchema.Blocks = append(topSchema.Blocks, hcl.BlockHeaderSchema{Type: name})
	topKeys = append(topKeys, name)
}

// owned decodes a registered block into the file's config.
func (h *hclFile) owned(b *hcl.Block, ob *ownedBlock) {
	if v := ob.hcl(h, b); v != nil {
		h.out.putOwned(b.Type, v, h.blockSource(b))
	}
}

// owned decodes a registered block's member of a JSON file.
func (j *jsonFile) owned(name string, v *jval, ob *ownedBlock) {
	if o := ob.json(j, v); o != nil {
		j.out.putOwned(name, o, j.at(v.off))
	}
}

func (f *fileConfig) putOwned(name string, v any, src diag.Source) {
	if f.owned == nil {
		f.owned = map[string]ownedValue{}
	}
	f.owned[name] = ownedValue{v, src}
}

// Owned is the options a registered block (RegisterBlock) decoded to, and
// where the block is, or nil when no file has the block.
func Owned[T any](c *Config, name string) *T {
	v, _ := c.owned[name].v.(*T)
	return v
}
