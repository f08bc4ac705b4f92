package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// blockCase is a table block as the tests see it: its rows' names and
// examples, and the block a loaded config holds, its origin cleared.
type blockCase struct {
	name  string
	keys  []option.Option[struct{}]
	req   []bool            // by row: the block must set it
	get   func(*Config) any // nil when the config has no such block
	unset any               // the block with nothing set
}

func caseOf[T any](tb tableBlock[T], get func(*Config) *T) blockCase {
	plain := func(o *T) any {
		cp := *o
		*tb.source(&cp) = diag.Source{}
		return cp
	}
	bc := blockCase{name: tb.Name, keys: names(tb.Options), unset: plain(tb.New())}
	for _, o := range tb.Options {
		bc.req = append(bc.req, o.Required)
	}
	bc.get = func(c *Config) any {
		if o := get(c); o != nil {
			return plain(o)
		}
		return nil
	}
	return bc
}

// text is the block in nexus.hcl and in JSON setting row i (if i >= 0)
// and the rows the block must set, each to its example; row i's name is
// written as name.
func (bc blockCase) text(i int, name string) (hclText, jsonText string) {
	var attrs, members []string
	for j, o := range bc.keys {
		switch {
		case j == i:
			attrs = append(attrs, fmt.Sprintf("  %s = %s\n", name, o.Example))
			members = append(members, fmt.Sprintf("%q: %s", name, o.Example))
		case bc.req[j]:
			attrs = append(attrs, fmt.Sprintf("  %s = %s\n", o.HCL, o.Example))
			members = append(members, fmt.Sprintf("%q: %s", o.JSON, o.Example))
		}
	}
	return fmt.Sprintf("%s {\n%s}\n", bc.name, strings.Join(attrs, "")),
		fmt.Sprintf(`{%q: {%s}}`, bc.name, strings.Join(members, ", "))
}

var blockCases = []blockCase{
	caseOf(lockBlock, func(c *Config) *LockPolicy { return c.Lock }),
	caseOf(telemetryBlock, func(c *Config) *Telemetry { return c.Telemetry }),
	caseOf(samplingBlock, func(c *Config) *Sampling { return c.Sampling }),
	caseOf(auditBlock, func(c *Config) *Audit { return c.Audit }),
}

// TestBlockOptions is TestTransportOptions for the top-level blocks a
// component owns: every row of the owner's table is read from nexus.hcl and
// from JSON to the same value, sets something, and comes back unchanged
// through nexus JSON (Compile). A new row is checked end to end without
// touching the loader.
func TestBlockOptions(t *testing.T) {
	for _, bc := range blockCases {
		for i, o := range bc.keys {
			t.Run(bc.name+"/"+o.HCL, func(t *testing.T) {
				if o.Example == "" {
					t.Fatalf("option %q has no Example", o.HCL)
				}
				dir := t.TempDir()
				load := func(name, src string) *Config {
					t.Helper()
					cfg, err := Load(Options{Files: []string{write(t, dir, name, src)}, Dir: dir, Home: dir, LookupEnv: env()})
					if err != nil {
						t.Fatalf("%s:\n%s\n%v", name, src, err)
					}
					return cfg
				}
				hclText, jsonText := bc.text(i, o.HCL)
				fromHCL, fromJSON := load("nexus.hcl", hclText), load("nexus.json", jsonText)
				// Without the row: the block's defaults and the rows it
				// must set, which are this row for a required one.
				base := bc.unset
				if !bc.req[i] {
					h, _ := bc.text(-1, "")
					base = bc.get(load("base.hcl", h))
				}
				got := bc.get(fromHCL)
				if got == nil || reflect.DeepEqual(got, base) {
					t.Fatalf("%s = %s set nothing: %+v", o.HCL, o.Example, got)
				}
				if j := bc.get(fromJSON); !reflect.DeepEqual(got, j) {
					t.Fatalf("nexus.hcl gave %+v, JSON %+v", got, j)
				}
				js, _, err := CompileShowingSecrets(fromHCL, FormatNexusJSON)
				if err != nil {
					t.Fatal(err)
				}
				if back := bc.get(load("back.json", string(js))); !reflect.DeepEqual(got, back) {
					t.Errorf("through nexus JSON %+v, want %+v\n%s", back, got, js)
				}
			})
		}
	}
}

// The loader's keys come from the tables: the block is known to both
// formats, and a misspelt row is refused in nexus.hcl and warned about in
// JSON, the row's name suggested either way.
func TestBlockOptionKeys(t *testing.T) {
	for _, bc := range blockCases {
		t.Run(bc.name, func(t *testing.T) {
			if !slices.Contains(topKeys, bc.name) {
				t.Errorf("%s is not a known top-level JSON member", bc.name)
			}
			if !slices.ContainsFunc(topSchema.Blocks, func(b hcl.BlockHeaderSchema) bool { return b.Type == bc.name }) {
				t.Errorf("%s is not in the nexus.hcl schema", bc.name)
			}
			i := slices.Index(bc.req, false) // a row the block need not set
			o := bc.keys[i]
			typo := o.HCL + "x"
			want := fmt.Sprintf("did you mean %q?", o.HCL)
			hclText, jsonText := bc.text(i, typo)
			_, err := loadOne(t, "nexus.hcl", hclText, nil)
			if err == nil || !strings.Contains(strings.ToLower(errText(err)), want) {
				t.Errorf("%s in nexus.hcl: %v", typo, err)
			}
			cfg, err := loadOne(t, "nexus.json", jsonText, nil)
			if err != nil {
				t.Fatalf("%s in JSON: %v", typo, err)
			}
			if !slices.ContainsFunc(cfg.Warnings, func(w Warning) bool { return strings.Contains(strings.ToLower(w.String()), want) }) {
				t.Errorf("%s in JSON: no warning saying %s in %v", typo, want, cfg.Warnings)
			}
		})
	}
}

// A row the block must set is required in both formats, with the block's
// example as the fix.
func TestBlockRequired(t *testing.T) {
	for _, bc := range blockCases {
		for i, o := range bc.keys {
			if !bc.req[i] {
				continue
			}
			t.Run(bc.name+"/"+o.HCL, func(t *testing.T) {
				h, j := bc.text(-1, "")
				h = strings.Replace(h, "  "+o.HCL+" = ", "  # "+o.HCL+" = ", 1)
				j = strings.Replace(j, fmt.Sprintf("%q: ", o.JSON), fmt.Sprintf("%q: ", "_"+o.JSON), 1)
				for name, src := range map[string]string{"nexus.hcl": h, "nexus.json": j} {
					_, err := loadOne(t, name, src, nil)
					if err == nil || !strings.Contains(errText(err), o.HCL) {
						t.Errorf("%s without %s:\n%s\n%v", name, o.HCL, src, err)
					}
				}
			})
		}
	}
}
