package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/option"
)

// exampleBlock stands for a component's block (the console's): registered
// as a component registers its own.
type exampleBlock struct {
	Listen string
	Roles  []string
}

func init() {
	RegisterBlock("example_owned", option.Table[exampleBlock]{
		option.Text("listen", "", false, func(o *exampleBlock) *string { return &o.Listen }, `"127.0.0.1:8760"`),
		{HCL: "roles", JSON: "roles", Example: `["admin"]`,
			Decode: func(o *exampleBlock, v option.Value) { o.Roles, _ = v.Strings("") }},
	})
}

// A registered block is read from nexus.hcl and from JSON alike (the
// console block in a JSON config), alone in a file or beside servers;
// a misspelt member warns with the nearest one, a wrong type is an error
// at its line.
func TestOwnedBlockJSON(t *testing.T) {
	want := &exampleBlock{Listen: "127.0.0.1:8760", Roles: []string{"admin"}}
	for name, src := range map[string]string{
		"nexus.hcl":  "example_owned {\n  listen = \"127.0.0.1:8760\"\n  roles  = [\"admin\"]\n}\n",
		"nexus.json": `{"example_owned": {"listen": "127.0.0.1:8760", "roles": ["admin"]}}`,
		"mcp.json":   `{"mcpServers": {"a": {"command": "x"}}, "example_owned": {"listen": "127.0.0.1:8760", "roles": ["admin"]}}`,
	} {
		cfg := mustLoad(t, name, src, nil)
		if got := Owned[exampleBlock](cfg, "example_owned"); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, want %+v", name, got, want)
		}
	}
	cfg := mustLoad(t, "nexus.json", `{"example_owned": {"listne": "127.0.0.1:8760"}}`, nil)
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].String(), `did you mean "listen"?`) {
		t.Errorf("warnings %v", cfg.Warnings)
	}
	_, err := loadOne(t, "nexus.json", "{\n  \"example_owned\": {\"roles\": \"admin\"}\n}", nil)
	if err == nil || !strings.Contains(errText(err), "line 2") || !strings.Contains(errText(err), "roles") {
		t.Errorf("a wrong type: %v", err)
	}
}
