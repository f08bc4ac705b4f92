package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/option"
)

// transportCase is one transport's option table as the tests see it: how
// a server selects the transport in each format, and its options on Server.
type transportCase struct {
	name      string
	keys      []option.Option[struct{}] // names and examples only
	hclBlock  string                    // the server's blocks, the option's attribute as %s = %s
	jsonEntry string                    // the server's JSON members, the option's as %q: %s
	options   func(*Server) any
}

func names[T any](t option.Table[T]) []option.Option[struct{}] {
	out := make([]option.Option[struct{}], len(t))
	for i, o := range t {
		out[i] = option.Option[struct{}]{HCL: o.HCL, JSON: o.JSON, Example: o.Example}
	}
	return out
}

var transportCases = []transportCase{
	{"stdio", names(stdioOptions), `stdio {
    command = "srv"
    %s = %s
  }`, `"command": "srv", %q: %s`, func(s *Server) any { return s.Stdio }},
	{"http", names(httpOptions), `http {
    url = "https://mcp.example.com/mcp"
    %s = %s
  }`, `"url": "https://mcp.example.com/mcp", %q: %s`, func(s *Server) any { return s.HTTP }},
	{"oauth", names(oauthOptions), `http {
    url = "https://mcp.example.com/mcp"
  }
  oauth {
    %s = %s
  }`, `"url": "https://mcp.example.com/mcp", "oauth": {%q: %s}`, func(s *Server) any { return *s.OAuth }},
}

// Every option in a transport's table is read from nexus.hcl and from JSON
// to the same value, and comes back unchanged through nexus.hcl (ToHCL) and
// nexus JSON (Compile): a new row is checked end to end without touching
// the loader.
func TestTransportOptions(t *testing.T) {
	for _, tc := range transportCases {
		for _, o := range tc.keys {
			t.Run(tc.name+"/"+o.HCL, func(t *testing.T) {
				if o.Example == "" {
					t.Fatalf("option %q has no Example", o.HCL)
				}
				dir := t.TempDir()
				write(t, dir, "vars.env", "FROM_FILE=1\n")
				load := func(name, src string) *Server {
					t.Helper()
					cfg, err := Load(Options{Files: []string{write(t, dir, name, src)}, LookupEnv: env()})
					if err != nil {
						t.Fatalf("%s:\n%s\n%v", name, src, err)
					}
					return cfg.Server("s")
				}
				fromHCL := load("nexus.hcl", fmt.Sprintf("server \"s\" {\n  "+tc.hclBlock+"\n}\n", o.HCL, o.Example))
				fromJSON := load("mcp.json", fmt.Sprintf(`{"mcpServers": {"s": {`+tc.jsonEntry+`}}}`, o.JSON, o.Example))
				got, zero := tc.options(fromHCL), reflect.Zero(reflect.TypeOf(tc.options(fromHCL))).Interface()
				if reflect.DeepEqual(got, zero) {
					t.Fatalf("%s = %s set nothing", o.HCL, o.Example)
				}
				if j := tc.options(fromJSON); !reflect.DeepEqual(got, j) {
					t.Fatalf("nexus.hcl gave %+v, JSON %+v", got, j)
				}

				out, warns := ToHCL(&Config{Servers: []*Server{fromJSON}}, "mcp.json")
				if len(warns) != 0 {
					t.Errorf("ToHCL warnings %v", warns)
				}
				if back := tc.options(load("back.hcl", string(out))); !reflect.DeepEqual(got, back) {
					t.Errorf("through nexus.hcl %+v, want %+v\n%s", back, got, out)
				}
				js, _, err := CompileShowingSecrets(&Config{Servers: []*Server{fromHCL}}, FormatNexusJSON)
				if err != nil {
					t.Fatal(err)
				}
				if back := tc.options(load("back.json", string(js))); !reflect.DeepEqual(got, back) {
					t.Errorf("through nexus JSON %+v, want %+v\n%s", back, got, js)
				}
			})
		}
	}
}

// The loader's schema and keys come from the tables: every option is known
// to both formats, and an HTTP option on a stdio server is flagged.
func TestTransportOptionKeys(t *testing.T) {
	for _, tc := range transportCases {
		for _, o := range tc.keys {
			schema := map[string]*hcl.BodySchema{"stdio": stdioSchema, "http": httpSchema, "oauth": oauthSchema}[tc.name]
			found := false
			for _, a := range schema.Attributes {
				found = found || a.Name == o.HCL
			}
			if !found {
				t.Errorf("%s option %q is not in its nexus.hcl block's schema", tc.name, o.HCL)
			}
			if tc.name == "oauth" {
				if !slices.Contains(oauthKeys, o.JSON) {
					t.Errorf("oauth option %q is not a known JSON key", o.JSON)
				}
				continue
			}
			if !slices.Contains(serverKeys, o.JSON) {
				t.Errorf("%s option %q is not a known JSON server key", tc.name, o.JSON)
			}
			if slices.Contains(httpOnlyKeys, o.JSON) != (tc.name == "http") {
				t.Errorf("%s option %q: only-for-HTTP is %v", tc.name, o.JSON, slices.Contains(httpOnlyKeys, o.JSON))
			}
		}
	}
}

// A transport checks its options where they are written: a header the
// HTTP transport would refuse at its first request is an error of the
// config, with the file and line, in both formats.
func TestTransportOptionsChecked(t *testing.T) {
	for name, src := range map[string]string{
		"mcp.json":  `{"mcpServers": {"s": {"url": "https://mcp.example.com/mcp", "headers": {"Bad Name": "x"}}}}`,
		"nexus.hcl": "server \"s\" {\n  http {\n    url = \"https://mcp.example.com/mcp\"\n    headers = {\"Bad Name\" = \"x\"}\n  }\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadOne(t, name, src, env())
			if err == nil || !strings.Contains(err.Error(), `header name "Bad Name" is not a valid HTTP header name`) {
				t.Fatalf("err = %v", err)
			}
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("no position:\n%v", err)
			}
		})
	}
}
