package config

import (
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// A variable whose default is env("X") carries env()'s secret mark: it
// loads (it panicked the loader once), its value is X's, and compiling
// writes a reference, never the value (issue 20, item 7): to X, which the
// client's environment supplies, not to the variable's own name (issue 42).
func TestEnvDefaults(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
variable "tok" {
  sensitive = true
  default   = env("X")
}
variable "plain" {
  default = env("X")
}
server "a" {
  stdio {
    command = "x"
    env     = { T = var.tok, P = var.plain }
  }
}
`, env("X", "s3cret"))
	s := cfg.Server("a")
	if s.Stdio.Env["T"] != "s3cret" || s.Stdio.Env["P"] != "s3cret" {
		t.Fatalf("env %v", s.Stdio.Env)
	}
	out, _, err := Compile(cfg, FormatMCPServers)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "s3cret") || strings.Contains(string(out), "TOK") || strings.Count(string(out), `"${X}"`) != 2 {
		t.Errorf("compiled:\n%s", out)
	}
}

// A default from env() is needed only when nothing else sets the
// variable: with $NEXUS_VAR_tok set, an unset X is no error.
func TestEnvDefaultNotNeeded(t *testing.T) {
	src := "variable \"tok\" {\n  sensitive = true\n  default   = env(\"X\")\n}\nserver \"a\" {\n  stdio {\n    command = \"x\"\n    env     = { T = var.tok }\n  }\n}\n"
	cfg := mustLoad(t, "nexus.hcl", src, env("NEXUS_VAR_tok", "from-tok"))
	if s := cfg.Server("a"); s.Stdio.Env["T"] != "from-tok" || s.Refs["/env/T"].String() != "${X}" {
		t.Errorf("env %v refs %v", s.Stdio.Env, s.Refs)
	}
	if _, err := loadOne(t, "nexus.hcl", src, nil); err == nil || !strings.Contains(err.Error(), `its default comes from env("X"), and X is not set`) {
		t.Errorf("neither set: %v", err)
	}
}

// The loader's last resort: a panic while decoding a file becomes that
// file's diagnostic, with no stack (issue 20, item 7).
func TestPanicBecomesDiagnostic(t *testing.T) {
	f := &file{src: diag.Source{File: "nexus.hcl", Layer: LayerLocal}}
	fc := &fileConfig{}
	func() {
		defer guardParse(f, &fc)
		var m map[string]int
		//lint:ignore SA5000 the runtime error's panic is the point
		m["x"] = 1 // a nil-map write panics with a runtime error
	}()
	if fc != nil || len(f.errs) != 1 {
		t.Fatalf("fc %v, errs %v", fc, f.errs)
	}
	text := f.errs[0].Error()
	if !strings.Contains(text, "Nexus failed while reading this file") || !strings.Contains(text, "nil map") ||
		strings.Contains(text, "goroutine") || strings.Contains(text, ".go:") {
		t.Errorf("report:\n%s", text)
	}
}
