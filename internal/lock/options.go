package lock

import (
	"fmt"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Policy is what a lock block says to do with tools the lockfile does not
// pin as they are: Block (withhold them, the default) or Warn (allow them
// and say so).
type Policy struct {
	OnChange string // a pinned tool whose definition changed
	OnNew    string // a tool, or a whole server, not pinned at all
	Source   diag.Source
}

// Values of Policy's fields.
const (
	Block = "block"
	Warn  = "warn"
)

// ConfigBlock is the config's lock block, in nexus.hcl and JSON alike:
// the config loader decodes and writes it through its options.
var ConfigBlock = option.Block[Policy]{
	Name: "lock",
	Options: option.Table[Policy]{
		action("on_change", func(p *Policy) *string { return &p.OnChange }, `"warn"`),
		action("on_new", func(p *Policy) *string { return &p.OnNew }, `"warn"`),
	},
	New:         func() *Policy { return &Policy{OnChange: Block, OnNew: Block} },
	HCLExample:  "lock {\n  on_change = \"block\"  # a pinned tool whose definition changed\n  on_new    = \"warn\"   # a tool not pinned at all\n}",
	JSONExample: `{"on_change": "block", "on_new": "warn"}`,
}

// action is an option whose value is Block or Warn. Both are always
// written, so the file says what it does without the reader knowing the
// default.
func action(name string, field func(*Policy) *string, example string) option.Option[Policy] {
	return option.Option[Policy]{HCL: name, JSON: name, Example: example,
		Decode: func(p *Policy, v option.Value) {
			s, ok := v.String("")
			if !ok {
				return
			}
			if s != Block && s != Warn {
				v.FailExample(fmt.Sprintf("%s %q is not %q (the default) or %q", name, s, Block, Warn))
			}
			*field(p) = s
		},
		Out: func(p *Policy, _ option.Writer) any { return *field(p) }}
}
