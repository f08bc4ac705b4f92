package console_test

import (
	"os"
	"path/filepath"
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

// TestReadmeBlocks loads the ```hcl console blocks of the READMEs as a
// reader would paste them, with the tokens in the environment.
func TestReadmeBlocks(t *testing.T) {
	n := 0
	for _, f := range []string{"README.md", "../../README.md"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(raw), "```hcl console\n")[1:] {
			block, _, _ := strings.Cut(part, "```")
			dir := t.TempDir()
			path := filepath.Join(dir, "nexus.hcl")
			if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(config.Options{Files: []string{path}, Dir: dir, Home: dir, NoDefault: true,
				LookupEnv: func(k string) (string, bool) { return k + "-0123456789abcdef", true }})
			if err != nil {
				t.Fatalf("%s:\n%s\n%v", f, block, err)
			}
			if o := console.Block(cfg); o == nil || len(o.Tokens) == 0 {
				t.Errorf("%s: the block has no console tokens:\n%s", f, block)
			}
			n++
		}
	}
	if n < 2 {
		t.Errorf("found %d console blocks in the READMEs, want one in each", n)
	}
}
