package readmesh_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/readmesh"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
	"github.com/nexus-mcp/nexus/sdk/plugin/plugintest"
)

// The templates' READMEs, run as a reader would: the shell blocks marked
// "<!-- outside-test -->", as written, in a temporary folder outside the
// repository with NEXUS set to this checkout. They copy the template, make
// it a module in a Go workspace, run its tests there (which import only
// what another module can) and build it. A README whose commands do not
// work fails here. The tests live here, not in the templates, so that a
// copy is the template and nothing else.

const examples = "../../examples"

// TestFilterTemplate then runs testdata/cases.json on the module the
// README's go build made, in the runtime Nexus uses.
func TestFilterTemplate(t *testing.T) {
	dir := filepath.Join(examples, "filter-template")
	sh := readmesh.New(t)
	sh.RunREADME(filepath.Join(dir, "README.md"))

	if len(sh.Builds) != 1 || !sh.Builds[0].WASM {
		t.Fatalf("README.md's blocks should build one module with GOOS=wasip1, built %+v", sh.Builds)
	}
	mod := sh.Builds[0].Path
	b, err := os.ReadFile(mod)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Fatalf("the module the README builds, %s: %v (not WebAssembly 1.0)", mod, err)
	}
	filtertest.RunWASM(t, strings.TrimSuffix(filepath.Base(mod), ".wasm"), mod, filepath.Join(dir, "testdata", "cases.json"))
}

// TestPluginTemplate then loads the binary the README's go build made
// through the host, as Nexus would, and has it decide a call.
func TestPluginTemplate(t *testing.T) {
	sh := readmesh.New(t)
	sh.RunREADME(filepath.Join(examples, "plugin-template", "README.md"))

	if len(sh.Builds) != 1 || sh.Builds[0].WASM {
		t.Fatalf("README.md's blocks should build one native binary, built %+v", sh.Builds)
	}
	bin := sh.Builds[0].Path
	if fi, err := os.Stat(bin); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("the binary the README builds: %v (mode %v)", err, fi)
	}

	// The deadline starts after the builds.
	p := plugintest.StartBinary(t, bin, "mine")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pol, err := p.Filter(ctx, "no-deletes", "policy", map[string]any{"deny": []any{"github.delete_*"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := pol.Handle(ctx, &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
		Server: event.Server{Name: "github"}, Tool: &event.Tool{Name: "delete_repo"}})
	if err != nil || d.Action != event.Deny {
		t.Fatalf("github.delete_repo through the built plugin: %+v %v", d, err)
	}
}
