package host

import (
	"reflect"
	"testing"

	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/registry"
)

// host's Status and Drift are converted field by field (a Status's Config
// is host's own Server, a Drift's items host's LockItems): a field added
// to the engine's and not to host's fails this.
func TestConvertedFields(t *testing.T) {
	names := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	for _, c := range []struct{ host, engine any }{{Status{}, registry.Status{}}, {Drift{}, lock.Drift{}}} {
		if h, e := names(c.host), names(c.engine); !reflect.DeepEqual(h, e) {
			t.Errorf("host's %T has %v, the engine's %v", c.host, h, e)
		}
	}
	// Every field of a Drift comes across.
	item := lock.Item{Name: "t", SHA256: "s", Description: "d", Rest: "{}", Flags: []string{"f"}}
	d := drift(lock.Drift{Server: "gh", Live: item, Pinned: &item, Fields: []lock.Field{{Path: "p"}}, Flags: []string{"f"}, Why: "w"})
	v := reflect.ValueOf(d)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Errorf("Drift.%s is not carried", v.Type().Field(i).Name)
		}
	}
	if d.Pinned.Name != "t" || d.Fields[0].Path != "p" {
		t.Errorf("drift %+v", d)
	}
}
