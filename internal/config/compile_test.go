package config

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// exampleEnv is the environment the examples are loaded in: every variable
// they refer to, with values that must never appear in compiled output.
var exampleEnv = env(
	"GITHUB_TOKEN", "ghp_SECRET_VALUE",
	"CLAUDE_TOKEN", "CLAUDE_SECRET_VALUE",
	"NEXUS_INPUT_API_KEY", "INPUT_SECRET_VALUE",
	"API_TOKEN", "API_SECRET_VALUE",
	"OWN_NAME", "OWN_SECRET_VALUE",
	"HOME", "/home/user",
	"PATH", "/usr/bin",
)

var secretValues = []string{"ghp_SECRET_VALUE", "CLAUDE_SECRET_VALUE", "INPUT_SECRET_VALUE", "API_SECRET_VALUE", "OWN_SECRET_VALUE"}

func examples(t *testing.T) (root string, files []string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{"*.json", "*.hcl"} {
		m, _ := filepath.Glob(filepath.Join(root, "examples/configs", pat))
		for _, f := range m {
			if filepath.Base(f) != "policy.json" { // a filter's settings, read by file()
				files = append(files, f)
			}
		}
	}
	if len(files) < 5 {
		t.Fatalf("examples: %v", files)
	}
	// Configs that exercise what the shipped examples leave out.
	extra, _ := filepath.Glob(filepath.Join(root, "internal/config/testdata/configs/*.hcl"))
	return root, append(files, extra...)
}

func loadExample(t *testing.T, root, path string, lookup func(string) (string, bool)) *Config {
	t.Helper()
	cfg, err := Load(Options{Files: []string{path}, Dir: root, Home: "/home/user", LookupEnv: lookup})
	if err != nil {
		t.Fatalf("%s:\n%v", path, err)
	}
	return cfg
}

// TestCompileExamples loads every example and compiles it to every
// format; the output and its warnings are pinned.
func TestCompileExamples(t *testing.T) {
	root, files := examples(t)
	for _, path := range files {
		name := strings.NewReplacer(".json", "", ".hcl", "_hcl", ".", "_").Replace(filepath.Base(path))
		cfg := loadExample(t, root, path, exampleEnv)
		for _, format := range Formats {
			t.Run(name+"/"+format, func(t *testing.T) {
				out, warns, err := Compile(cfg, format)
				if err != nil {
					t.Fatal(err)
				}
				again, _, _ := Compile(cfg, format)
				if string(again) != string(out) {
					t.Error("output is not deterministic")
				}
				for _, s := range secretValues {
					if strings.Contains(string(out), s) {
						t.Errorf("a secret was baked into the output:\n%s", out)
					}
				}
				var b strings.Builder
				b.Write(out)
				for _, w := range warns {
					b.WriteString(w.String() + "\n")
				}
				golden(t, "compile/"+name+"_"+format, strings.ReplaceAll(b.String(), root, "$ROOT"))
			})
		}
	}
}

// TestNexusJSONRoundTrip: nexus-json loads back to the identical model,
// for every example.
func TestNexusJSONRoundTrip(t *testing.T) {
	root, files := examples(t)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cfg := loadExample(t, root, path, exampleEnv)
			out, _, err := Compile(cfg, FormatNexusJSON)
			if err != nil {
				t.Fatal(err)
			}
			tmp := filepath.Join(t.TempDir(), "compiled.json")
			if err := os.WriteFile(tmp, out, 0o600); err != nil {
				t.Fatal(err)
			}
			back := loadExample(t, root, tmp, exampleEnv)
			if diff := modelDiff(cfg, back); diff != "" {
				t.Errorf("round trip changed the model: %s\n%s", diff, out)
			}
		})
	}
}

// modelDiff compares what a config means, leaving out where it came from.
func modelDiff(a, b *Config) string {
	strip := func(c *Config) *Config {
		c2 := &Config{Roots: c.Roots, Inputs: c.Inputs}
		if c.Gateway != nil {
			c2.Gateway = withoutSites(c.Gateway)
			c2.Gateway.Source, c2.Gateway.Overrides = diag.Source{}, nil
		}
		for _, s := range c.Servers {
			x := *s
			x.Source, x.Overrides = diag.Source{}, nil
			x.Refs = unnamed(s.Refs)
			c2.Servers = append(c2.Servers, &x)
		}
		for _, p := range c.Plugins {
			x := *p
			x.Source, x.Overrides = diag.Source{}, nil
			c2.Plugins = append(c2.Plugins, &x)
		}
		for _, f := range c.Filters {
			c2.Filters = append(c2.Filters, ruleMeaning(f))
		}
		for _, g := range c.Agents {
			x := *g
			x.Source, x.Overrides, x.Rules = diag.Source{}, nil, nil
			x.Refs = unnamed(g.Refs)
			for _, r := range g.Rules {
				x.Rules = append(x.Rules, ruleMeaning(r))
			}
			c2.Agents = append(c2.Agents, &x)
		}
		return c2
	}
	sa, sb := strip(a), strip(b)
	switch {
	case !reflect.DeepEqual(sa.Servers, sb.Servers):
		for i := range sa.Servers {
			if i < len(sb.Servers) && !reflect.DeepEqual(sa.Servers[i], sb.Servers[i]) {
				return "server " + sa.Servers[i].Name + ": " + showDiff(sa.Servers[i], sb.Servers[i])
			}
		}
		return "servers"
	case !reflect.DeepEqual(sa.Plugins, sb.Plugins):
		return "plugins"
	case !reflect.DeepEqual(sa.Filters, sb.Filters):
		return "filters"
	case !reflect.DeepEqual(sa.Agents, sb.Agents):
		return "agents"
	case !reflect.DeepEqual(sa.Gateway, sb.Gateway):
		return "gateway"
	case !reflect.DeepEqual(sa.Roots, sb.Roots):
		return "roots"
	case !reflect.DeepEqual(sa.Inputs, sb.Inputs):
		return "inputs"
	}
	return ""
}

// unnamed is refs without Ref.Named: which variable a reference is named
// after is where it came from, which compiled JSON does not keep.
func unnamed(refs map[string]Template) map[string]Template {
	if refs == nil {
		return nil
	}
	out := make(map[string]Template, len(refs))
	for k, t := range refs {
		var u Template
		for _, p := range t {
			if p.Ref != nil {
				r := *p.Ref
				r.Named = ""
				p.Ref = &r
			}
			u = append(u, p)
		}
		out[k] = u
	}
	return out
}

// ruleMeaning is a filter without where it (and its rule's expressions)
// were written, and without the compiled rule.
func ruleMeaning(f *Filter) *Filter {
	x := *f
	x.Source, x.Overrides = diag.Source{}, nil
	x.Refs = unnamed(f.Refs)
	if f.Rule != nil {
		r := *f.Rule
		r.Compiled = nil
		r.When.Source = diag.Source{}
		r.Set = nil
		for _, a := range f.Rule.Set {
			a.Value.Source = diag.Source{}
			r.Set = append(r.Set, a)
		}
		sort.Slice(r.Set, func(i, j int) bool { return r.Set[i].Path < r.Set[j].Path })
		x.Rule = &r
	}
	return &x
}

func showDiff(a, b any) string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for i := 0; i < va.NumField(); i++ {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return va.Type().Field(i).Name
		}
	}
	return "?"
}

func TestSecretInsideLargerString(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
variable "token" {
  sensitive = true
}
server "api" {
  http {
    url     = "https://api.example.com/mcp"
    headers = { Authorization = "Bearer ${var.token}", Cookie = "a=${env("COOKIE")}; b=1" }
  }
}`, env("TOKEN", "tok-123", "COOKIE", "c00kie"))
	for _, format := range Formats {
		out, _, err := Compile(cfg, format)
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		if strings.Contains(s, "tok-123") || strings.Contains(s, "c00kie") {
			t.Errorf("%s: secret baked in:\n%s", format, s)
		}
		want := `"Bearer ${TOKEN}"`
		if format == FormatVSCode {
			want = `"Bearer ${env:TOKEN}"`
		}
		if !strings.Contains(s, want) {
			t.Errorf("%s: want %s in\n%s", format, want, s)
		}
	}
}

func TestCompileUnknownFormat(t *testing.T) {
	if _, _, err := Compile(&Config{}, "yaml"); err == nil {
		t.Fatal("unknown format accepted")
	}
}
