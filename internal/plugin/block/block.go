package block

import (
	"fmt"
	"strings"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Plugin is a go-plugin binary a transport or filter can name.
type Plugin struct {
	Name      string
	Path      string // absolute
	SHA256    string // lower-case hex; "" = not pinned
	Source    diag.Source
	Overrides []diag.Source
}

// Config is the config's plugin block: plugin "name" { ... } in
// nexus.hcl, a member of the "plugins" object in JSON.
var Config = option.Block[Plugin]{
	Name:        "plugin",
	Options:     options,
	New:         func() *Plugin { return &Plugin{} },
	HCLExample:  "plugin \"ssh\" {\n  path = \"./plugins/ssh\"\n}",
	JSONExample: `{"path": "./plugins/ssh"}`,
	JSONName:    "plugins",
	Check: func(p *Plugin, b option.Body, _ bool) {
		if p.Path != "" && !b.Exists(p.Path) {
			b.Warn(fmt.Sprintf("%s does not exist (yet)", p.Path))
		}
	},
}

var options = option.Table[Plugin]{
	{HCL: "name", JSON: "name", Label: true, Required: true, Example: `"ssh"`,
		Decode: func(p *Plugin, v option.Value) {
			var ok bool
			if p.Name, ok = v.String(""); ok {
				if bad := option.CheckName("plugin", p.Name); bad != "" {
					v.Fail(bad, option.NameRule)
				}
			}
		},
		Out: func(p *Plugin, _ option.Writer) any { return p.Name }},
	// A relative path starts at the config file's directory; a workspace
	// file's may not leave the workspace.
	{HCL: "path", JSON: "path", Required: true, Example: `"./plugins/ssh"`,
		Decode: func(p *Plugin, v option.Value) { p.Path, _ = v.Path("") },
		Out:    func(p *Plugin, _ option.Writer) any { return p.Path }},
	{HCL: "sha256", JSON: "sha256", Example: `"` + strings.Repeat("0f", 32) + `"`,
		Decode: func(p *Plugin, v option.Value) {
			var ok bool
			if p.SHA256, ok = v.String(""); ok {
				if bad := option.CheckSHA256(p.SHA256); bad != "" {
					v.Fail(bad, "")
				}
			}
		},
		Out: func(p *Plugin, _ option.Writer) any {
			if p.SHA256 == "" {
				return nil
			}
			return p.SHA256
		}},
}
