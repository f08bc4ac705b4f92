package console_test

import (
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// The console block is the console's (config.RegisterBlock): nexus.hcl
// decodes it through OptionTable, tokens from sensitive variables too.
func TestConsoleBlock(t *testing.T) {
	cfg, err := config.ParseHCL([]byte(`
variable "admin" {
  sensitive = true
  default   = "`+adminToken+`"
}
console {
  listen          = "127.0.0.1:8760"
  tokens          = [var.admin]
  readonly_tokens = ["`+viewerToken+`"]
}
`), diag.Source{File: "nexus.hcl"})
	if err != nil {
		t.Fatal(err)
	}
	o := console.Block(cfg)
	if o == nil || o.Listen != "127.0.0.1:8760" || len(o.Tokens) != 1 || o.Tokens[0] != adminToken || len(o.ReadOnly) != 1 || o.ReadOnly[0] != viewerToken {
		t.Fatalf("console block: %+v", o)
	}

	cfg, err = config.ParseHCL([]byte("server \"a\" {\n  stdio {\n    command = \"x\"\n  }\n}\n"), diag.Source{File: "nexus.hcl"})
	if err != nil || console.Block(cfg) != nil {
		t.Fatalf("no block: %v %+v", err, console.Block(cfg))
	}

	for _, c := range []struct{ hcl, want string }{
		{"console {\n  tokens = [\"short\"]\n}\n", "shorter than 16 characters"},
		{"console {\n  token = [\"" + adminToken + "\"]\n}\n", "token"},
		{"console {\n  tokens = \"" + adminToken + "\"\n}\n", "tokens"},
	} {
		_, err := config.ParseHCL([]byte(c.hcl), diag.Source{File: "nexus.hcl"})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.hcl, err, c.want)
		}
	}
}
