package host

import (
	"reflect"
	"testing"

	"github.com/nexus-mcp/nexus/internal/registry"
)

// Servers converts the engine's Status field by field (its Config is
// host's own Server): a field added there and not here fails this.
func TestStatusFields(t *testing.T) {
	names := func(v any) []string {
		var out []string
		for f := range reflect.TypeOf(v).Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	if h, e := names(Status{}), names(registry.Status{}); !reflect.DeepEqual(h, e) {
		t.Errorf("host.Status has %v, the engine's %v", h, e)
	}
}
