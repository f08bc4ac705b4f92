package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// layers builds a home, an ancestor and a project directory with a config
// in each, and returns the root, home and project directories.
func layers(t *testing.T) (root, home, proj string) {
	root = t.TempDir()
	home = filepath.Join(root, "home")
	proj = filepath.Join(root, "src", "team", "proj")
	write(t, home, ".nexus/mcp.json", `{"mcpServers": {
  "a": {"command": "global-a"},
  "b": {"command": "global-b"}
}}`)
	write(t, root, "src/.nexus/nexus.hcl", `
server "b" {
  stdio { command = "ancestor-b" }
}
plugin "p" { path = "p" }
filter "f1" {
  kind   = "policy"
  plugin = "p"
}
`)
	write(t, proj, ".nexus/mcp.json", `{"mcpServers": {"c": {"command": "local-c"}}}`)
	write(t, proj, "nexus.hcl", `
server "a" {
  stdio { command = "local-a" }
}
filter "f2" {
  kind   = "sanitizer"
  plugin = "p"
}
filter "f1" {
  kind     = "policy"
  plugin   = "p"
  on_error = "allow"
}
`)
	trustFiles(t, home, filepath.Join(root, "src/.nexus/nexus.hcl"), filepath.Join(proj, ".nexus/mcp.json"), filepath.Join(proj, "nexus.hcl"))
	return root, home, proj
}

func TestLayering(t *testing.T) {
	root, home, proj := layers(t)
	cfg, err := Load(Options{Dir: proj, Home: home, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range cfg.Files {
		rel, _ := filepath.Rel(root, f.Path)
		files = append(files, f.Layer+" "+filepath.ToSlash(rel))
	}
	want := []string{"global home/.nexus/mcp.json", "ancestor src/.nexus/nexus.hcl", "local src/team/proj/.nexus/mcp.json", "local src/team/proj/nexus.hcl"}
	if !reflect.DeepEqual(files, want) {
		t.Errorf("files\n%q\nwant\n%q", files, want)
	}
	cmd := func(n string) string { return cfg.Server(n).Command[0] }
	if cmd("a") != "local-a" || cmd("b") != "ancestor-b" || cmd("c") != "local-c" {
		t.Errorf("later layers win: a=%s b=%s c=%s", cmd("a"), cmd("b"), cmd("c"))
	}
	a := cfg.Server("a")
	if a.Source.Layer != LayerLocal || a.Source.Line != 2 || len(a.Overrides) != 1 || a.Overrides[0].Layer != LayerGlobal || a.Overrides[0].Line != 2 {
		t.Errorf("a: origin %+v overrides %+v", a.Source, a.Overrides)
	}
	if b := cfg.Server("b"); b.Source.Layer != LayerAncestor || len(b.Overrides) != 1 {
		t.Errorf("b: origin %+v overrides %+v", b.Source, b.Overrides)
	}
	// A filter keeps its place in the chain when a later layer changes it.
	if len(cfg.Filters) != 2 || cfg.Filters[0].Name != "f1" || cfg.Filters[0].OnError != "allow" || len(cfg.Filters[0].Overrides) != 1 {
		t.Errorf("filters %+v %+v", cfg.Filters[0], cfg.Filters[1])
	}
}

func TestConfigFlagReplacesDiscovery(t *testing.T) {
	_, home, proj := layers(t)
	one := write(t, proj, "one.json", `{"mcpServers": {"x": {"command": "one"}}}`)
	two := write(t, proj, "two.json", `{"mcpServers": {"x": {"command": "two"}, "y": {"command": "y"}}}`)
	cfg, err := Load(Options{Files: []string{"one.json", two}, Dir: proj, Home: home, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Names(); !reflect.DeepEqual(got, []string{"x", "y"}) || cfg.Server("x").Command[0] != "two" {
		t.Errorf("servers %v", got)
	}
	cfg, err = Load(Options{Dir: proj, Home: home, LookupEnv: env("NEXUS_CONFIG", one)})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Names(); !reflect.DeepEqual(got, []string{"x"}) || cfg.Files[0].Layer != LayerEnv {
		t.Errorf("NEXUS_CONFIG: %v %v", got, cfg.Files)
	}
}

func TestEmbeddedDefault(t *testing.T) {
	dir := t.TempDir()
	cfg, err := Load(Options{Dir: dir, Home: dir, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server("testserver")
	if s == nil || !reflect.DeepEqual(s.Command, []string{"nexus", "testserver"}) || s.Source.Layer != LayerEmbedded {
		t.Fatalf("default: %+v", s)
	}
	if cfg, err = Load(Options{Dir: dir, Home: dir, LookupEnv: env(), NoDefault: true}); err != nil || len(cfg.Servers) != 0 {
		t.Errorf("NoDefault: %v %v", cfg.Names(), err)
	}
}

// A layer that only adds an agent (as the permission error advises) keeps
// the built-in default's test server beneath it, with a warning; a layer
// with a server of its own replaces the default, and --config reads
// exactly what it names.
func TestDefaultBeneathServerlessLayers(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".nexus"), 0o700)
	user := filepath.Join(home, ".nexus", "nexus.hcl")
	os.WriteFile(user, []byte("agent \"cli\" {\n  permission = \"yolo\"\n}\n"), 0o600)
	cfg, err := Load(Options{Dir: t.TempDir(), Home: home, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Server("testserver"); s == nil || s.Source.Layer != LayerEmbedded {
		t.Fatalf("servers %v", cfg.Names())
	}
	if a := cfg.Agent("cli"); a == nil || a.Permission != "yolo" {
		t.Fatalf("the user layer's agent was lost: %+v", a)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Message, "built-in default") {
		t.Errorf("warnings %v", cfg.Warnings)
	}

	os.WriteFile(user, []byte("agent \"cli\" {\n  permission = \"yolo\"\n}\nserver \"mine\" {\n  stdio { command = \"x\" }\n}\n"), 0o600)
	if cfg, err := Load(Options{Dir: t.TempDir(), Home: home, LookupEnv: env()}); err != nil || !reflect.DeepEqual(cfg.Names(), []string{"mine"}) || len(cfg.Warnings) != 0 {
		t.Errorf("a layer with a server: %v %v %v", cfg.Names(), cfg.Warnings, err)
	}
	only := filepath.Join(t.TempDir(), "agents.hcl")
	os.WriteFile(only, []byte("agent \"cli\" {\n  permission = \"yolo\"\n}\n"), 0o600)
	if cfg, err := Load(Options{Files: []string{only}, LookupEnv: env()}); err != nil || len(cfg.Servers) != 0 {
		t.Errorf("--config: %v %v", cfg.Names(), err)
	}
}

// The built-in default is the repository's nexus.hcl; go:embed cannot
// reach outside the package, so a copy is kept and this keeps it honest.
func TestDefaultMatchesRootNexusHCL(t *testing.T) {
	root, err := os.ReadFile("../../nexus.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(root, DefaultHCL()) {
		t.Error("internal/config/default.hcl differs from the repository's nexus.hcl; copy one over the other")
	}
}

func TestDuplicateAcrossLayersIsAnOverride(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.json", `{"mcpServers": {"x": {"command": "a"}}}`)
	write(t, dir, "b.hcl", "server \"x\" {\n  stdio { command = \"b\" }\n}\n")
	cfg, err := Load(Options{Files: []string{"a.json", "b.hcl"}, Dir: dir, Home: dir, LookupEnv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if x := cfg.Server("x"); x.Command[0] != "b" || len(x.Overrides) != 1 || x.Overrides[0].File != "a.json" {
		t.Errorf("%+v", x)
	}
}

func TestErrorsFromEveryFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.json", `{"mcpServers": {"x": {}}}`)
	write(t, dir, "b.hcl", "bogus {}\n")
	_, err := Load(Options{Files: []string{"a.json", "b.hcl"}, Dir: dir, Home: dir, LookupEnv: env()})
	reps := Reports(err)
	if len(reps) != 2 || reps[0].Source.File != "a.json" || reps[1].Source.File != "b.hcl" {
		t.Fatalf("want one error from each file, got %d:\n%v", len(reps), err)
	}
}

func TestAllowUnset(t *testing.T) {
	src := `{"mcpServers": {"a": {"command": "x", "env": {"T": "${NOPE}"}}}}`
	dir := t.TempDir()
	write(t, dir, "mcp.json", src)
	cfg, err := Load(Options{Files: []string{"mcp.json"}, Dir: dir, Home: dir, LookupEnv: env(), AllowUnset: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Server("a").Refs["/env/T"].String(); got != "${NOPE}" {
		t.Errorf("template %q", got)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Message, "${NOPE}") {
		t.Errorf("warnings %v", cfg.Warnings)
	}
}
