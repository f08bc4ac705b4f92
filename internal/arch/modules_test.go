package arch

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"
)

// TestModulesAgree pins that the bench and deploy modules build every
// module they share with the main module at the main module's version.
// make test compiles all three with the race detector; a shared dependency
// at another version (say go-isatty, under hclog) is another package, so
// every Nexus package above it was compiled a second time: on a cold
// machine, nine minutes of CI (issue 37). Each go.mod lists every module
// that provides a package to its build (go 1.17 and later), so comparing
// the files is enough.
//
// The fix, when this fails: raise the main module to the higher version
// (go get module@version; go mod tidy), then run go mod tidy in bench and
// deploy.
func TestModulesAgree(t *testing.T) {
	main := requires(t, "../../go.mod")
	for _, mod := range []string{"bench", "deploy"} {
		for path, v := range requires(t, filepath.Join("../..", mod, "go.mod")) {
			if mv, ok := main[path]; ok && mv != v {
				t.Errorf("%s/go.mod requires %s %s, the main module %s: the packages above it compile twice in make test; raise the main module to the higher (go get %s@<higher>; go mod tidy), then go mod tidy in bench and deploy",
					mod, path, v, mv, path)
			}
		}
	}
}

func requires(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(file, data, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := make(map[string]string, len(f.Require))
	for _, r := range f.Require {
		out[r.Mod.Path] = r.Mod.Version
	}
	return out
}
