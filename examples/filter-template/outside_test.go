//go:build !wasip1

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/readmesh"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// TestOutside runs the shell blocks of README.md marked
// "<!-- outside-test -->", as written, in a temporary folder outside the
// repository with NEXUS set to this checkout: it copies the template, makes
// it a module in a Go workspace, runs its tests there and builds the .wasm.
// Then it runs testdata/cases.json on the module the README's go build
// made, in the runtime Nexus uses. A README whose commands do not work
// fails here.
//
// (The copy's own outside_test.go is the one file the README removes: it
// uses this repository's internal packages.)
func TestOutside(t *testing.T) {
	sh := readmesh.New(t)
	sh.RunREADME("README.md")

	if _, err := os.Stat(filepath.Join(sh.Dir, "outside_test.go")); err == nil {
		t.Errorf("the copy in %s still has outside_test.go: the README should remove it", sh.Dir)
	}
	if len(sh.Builds) != 1 || !sh.Builds[0].WASM {
		t.Fatalf("README.md's blocks should build one module with GOOS=wasip1, built %+v", sh.Builds)
	}
	mod := sh.Builds[0].Path
	b, err := os.ReadFile(mod)
	if err != nil || !bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Fatalf("the module the README builds, %s: %v (not WebAssembly 1.0)", mod, err)
	}
	rt := filtertest.Runtime(t, wasm.Options{})
	filtertest.RunSuites(t, rt, strings.TrimSuffix(filepath.Base(mod), ".wasm"), mod, "testdata/cases.json")
}
