package wasm_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The dependency rule of ARCHITECTURE.md: filters import only sdk/filter
// and sdk/event (and the standard library), in the WASM build and the
// native one. Their _test.go files are the host's harness around them and
// are not part of what a filter is built from, so -test is not asked for.
func TestFilterDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/nexus-mcp/nexus/sdk/filter": true,
		"github.com/nexus-mcp/nexus/sdk/event":  true,
		// The secret detectors redact-secrets shares with the host's
		// audit log (one implementation; internal/arch allows it too).
		"github.com/nexus-mcp/nexus/sdk/filter/redact": true,
		// The ABI's names and numbers and the JSON scanner and string
		// encoder, which the SDK is built on.
		"github.com/nexus-mcp/nexus/internal/filterabi": true,
		"github.com/nexus-mcp/nexus/internal/wire":      true,
	}
	for _, env := range [][]string{{"GOOS=wasip1", "GOARCH=wasm"}, nil} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./filters/...", "./examples/filter-template")
		cmd.Dir = testenv.Root(t)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "github.com/nexus-mcp/nexus/filters/") || p == "github.com/nexus-mcp/nexus/examples/filter-template" {
				continue // the filters themselves
			}
			if !allowed[p] {
				t.Errorf("%v: a filter depends on %s; filters may import only sdk/filter (and its redact), sdk/event and the standard library", env, p)
			}
		}
	}
}
