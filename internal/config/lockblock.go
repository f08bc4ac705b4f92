package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// LockPolicy is what a lock block says to do with tools the lockfile
// (nexus.lock.hcl) does not pin as they are: LockBlock (withhold them, the
// default) or LockWarn (allow them and say so).
type LockPolicy struct {
	OnChange string // a pinned tool whose definition changed
	OnNew    string // a tool, or a whole server, not pinned at all
	Source   diag.Source
}

// Values of LockPolicy's fields.
const (
	LockBlock = "block"
	LockWarn  = "warn"
)

var (
	lockSchema  = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "on_change"}, {Name: "on_new"}}}
	lockKeys    = []string{"on_change", "on_new"}
	lockExample = "lock {\n  on_change = \"block\"  # a pinned tool whose definition changed\n  on_new    = \"warn\"   # a tool not pinned at all\n}"
)

func checkLockAction(field, v string) string {
	if v == LockBlock || v == LockWarn {
		return ""
	}
	return fmt.Sprintf("%s %q is not %q (the default) or %q", field, v, LockBlock, LockWarn)
}

// lock decodes a lock block.
func (h *hclFile) lock(b *hcl.Block) {
	c, ok := h.content(b, lockSchema)
	if !ok {
		return
	}
	p := &LockPolicy{OnChange: LockBlock, OnNew: LockBlock, Source: h.blockSource(b)}
	before := len(h.errs)
	for _, f := range []struct {
		name string
		dst  *string
	}{{"on_change", &p.OnChange}, {"on_new", &p.OnNew}} {
		if a := c.Attributes[f.name]; a != nil {
			if v, ok := h.str(a, nil, ""); ok {
				if bad := checkLockAction(f.name, v); bad != "" {
					h.errRange(a.Expr.Range(), "", bad, lockExample)
				}
				*f.dst = v
			}
		}
	}
	if len(h.errs) == before {
		h.out.lock = p
	}
}

// lock decodes the "lock" object of a JSON file.
func (j *jsonFile) lock(v *jval) {
	d := &dec{j: j, what: "lock"}
	if v.kind != '{' {
		d.typeErr(v, "lock", "an object", `{"on_change": "block", "on_new": "warn"}`)
		return
	}
	if !d.keys(v, "lock", lockKeys) {
		return
	}
	p := &LockPolicy{OnChange: LockBlock, OnNew: LockBlock, Source: j.at(v.off)}
	before := len(j.errs)
	for _, m := range v.obj {
		if s, ok := d.str(m.val, m.key, ""); ok {
			if bad := checkLockAction(m.key, s); bad != "" {
				d.errAt(m.val, bad)
			}
			if m.key == "on_change" {
				p.OnChange = s
			} else {
				p.OnNew = s
			}
		}
	}
	if len(j.errs) == before {
		j.out.lock = p
	}
}
