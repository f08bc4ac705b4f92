package arch

import (
	"go/build/constraint"
	"slices"
	"strings"
	"testing"
)

// The checks see a test's imports as well as the package's own, on a
// made-up tree (not by planting a bad import in the real one): an
// extension's test that imports internal/ fails the rules, a test whose
// import climbs fails the floors, and a test kit or a stated test climb
// is allowed.
func TestChecksSeeTests(t *testing.T) {
	p := func(path string) string { return mod + path }
	fs := []floor{ // bottom first
		{name: "ground", paths: []string{"internal/bounded", "internal/testenv"}},
		{name: "protocols", paths: []string{"sdk/plugin"}},
		{name: "transports", paths: []string{"internal/auth"}},
		{name: "chain", paths: []string{"internal/plugin", "internal/explain"}},
		{name: "kits", paths: []string{"sdk/plugin/plugintest"}},
		{name: "extensions", paths: []string{"plugins/..."}},
	}
	ps := []pkg{
		// A plugin whose own files are clean; its test imports the
		// host's plugin package (planted), a public kit, and the plugin.
		{ImportPath: p("plugins/x"), Imports: []string{p("sdk/plugin")},
			XTestImports: []string{p("internal/plugin"), p("sdk/plugin/plugintest"), p("plugins/x")}},
		// A leaf whose test climbs to the chain (planted) and uses the
		// test environment (a kit).
		{ImportPath: p("internal/bounded"), TestImports: []string{p("internal/plugin"), p("internal/testenv")}},
		// The host's side of plugins, tested with the author's kit.
		{ImportPath: p("internal/plugin"), XTestImports: []string{p("sdk/plugin/plugintest"), p("internal/plugin")}},
		// A stated climb (testClimbs).
		{ImportPath: p("internal/auth"), XTestImports: []string{p("internal/explain"), p("internal/auth")}},
		{ImportPath: p("internal/explain"), Imports: []string{p("internal/auth")}},
		{ImportPath: p("internal/testenv")},
		{ImportPath: p("sdk/plugin")},
		{ImportPath: p("sdk/plugin/plugintest"), Imports: []string{p("internal/plugin")}},
	}
	heads := func(errs []string) []string {
		var out []string
		for _, e := range errs {
			head, _, _ := strings.Cut(e, ":")
			out = append(out, head)
		}
		slices.Sort(out)
		return out
	}
	if got, want := heads(ruleErrors(ps)), []string{
		"internal/bounded (its tests) imports internal/plugin",
		"plugins/x (its tests) imports internal/plugin",
	}; !slices.Equal(got, want) {
		t.Errorf("the rules found %q; want %q\n%s", got, want, strings.Join(ruleErrors(ps), "\n"))
	}
	if got, want := heads(floorErrors(fs, ps)), []string{
		`internal/bounded (floor "ground") has a test that imports internal/plugin (floor "chain", above it)`,
	}; !slices.Equal(got, want) {
		t.Errorf("the floors found %q; want %q\n%s", got, want, strings.Join(floorErrors(fs, ps), "\n"))
	}
	// The same imports made by the packages' own files are all refused
	// (a kit is for tests only).
	for i := range ps {
		ps[i].Imports = append(ps[i].Imports, ps[i].TestImports...)
		ps[i].Imports = append(ps[i].Imports, ps[i].XTestImports...)
		ps[i].TestImports, ps[i].XTestImports = nil, nil
	}
	if got, want := heads(ruleErrors(ps)), []string{
		"internal/bounded imports internal/plugin",
		"internal/bounded imports internal/testenv",
		"plugins/x imports internal/plugin",
	}; !slices.Equal(got, want) {
		t.Errorf("without tests, the rules found %q; want %q", got, want)
	}
	if got, want := heads(floorErrors(fs, ps)), []string{
		`internal/auth (floor "transports") imports internal/explain (floor "chain", above it)`,
		`internal/bounded (floor "ground") imports internal/plugin (floor "chain", above it)`,
		`internal/plugin (floor "chain") imports sdk/plugin/plugintest (floor "kits", above it)`,
	}; !slices.Equal(got, want) {
		t.Errorf("without tests, the floors found %q; want %q", got, want)
	}
}

// A file no platform builds (a generator's //go:build ignore) is not the
// package's; a file of another platform's is.
func TestBuildable(t *testing.T) {
	for line, want := range map[string]bool{
		"//go:build ignore":            false,
		"//go:build windows":           true,
		"//go:build !wasip1":           true,
		"//go:build wasip1 && !wasip1": false,
		"//go:build linux || ignore":   true,
		"//go:build ignore && linux":   false,
	} {
		expr, err := constraint.Parse(line)
		if err != nil {
			t.Fatal(err)
		}
		if got := buildable(expr); got != want {
			t.Errorf("%s: buildable = %v, want %v", line, got, want)
		}
	}
}
