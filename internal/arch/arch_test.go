package arch

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

const mod = "github.com/nexus-mcp/nexus/"

type pkg struct {
	ImportPath                         string
	Imports, TestImports, XTestImports []string

	Dir, Name               string
	GoFiles, IgnoredGoFiles []string
}

// packages lists every package of the module with its direct imports.
func packages(t *testing.T) []pkg { return packagesIn(t, ".") }

// packagesIn lists the packages of the module in dir, relative to the
// repository's root.
func packagesIn(t *testing.T, dir string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = filepath.Join(testenv.Root(t), dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ps []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, f := range p.IgnoredGoFiles {
			otherPlatform(t, &p, f)
		}
		ps = append(ps, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	return ps
}

// buildable says whether some platform builds a file with the constraint
// expr: some choice of its tags but "ignore" satisfies it.
func buildable(expr constraint.Expr) bool {
	var tags []string
	var walk func(constraint.Expr)
	walk = func(e constraint.Expr) {
		switch e := e.(type) {
		case *constraint.TagExpr:
			if e.Tag != "ignore" && !slices.Contains(tags, e.Tag) {
				tags = append(tags, e.Tag)
			}
		case *constraint.NotExpr:
			walk(e.X)
		case *constraint.AndExpr:
			walk(e.X)
			walk(e.Y)
		case *constraint.OrExpr:
			walk(e.X)
			walk(e.Y)
		}
	}
	walk(expr)
	if len(tags) > 12 {
		return true // too many to try; a real constraint names a few
	}
	for set := 0; set < 1<<len(tags); set++ {
		if expr.Eval(func(tag string) bool {
			i := slices.Index(tags, tag)
			return i >= 0 && set&(1<<i) != 0
		}) {
			return true
		}
	}
	return false
}

// otherPlatform adds the imports of file, a file of p that go list left
// out for this platform (a _windows.go, a wasip1 filter's ABI), to p's: the
// rules hold on every platform. A file built for no platform (//go:build
// ignore: a generator, say) is not the package's.
func otherPlatform(t *testing.T, p *pkg, file string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, file), nil, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Comments {
		if g.Pos() > f.Package {
			break
		}
		for _, c := range g.List {
			if expr, err := constraint.Parse(c.Text); err == nil && !buildable(expr) {
				return
			}
		}
	}
	var to *[]string
	switch {
	case !strings.HasSuffix(file, "_test.go"):
		to = &p.Imports
	case strings.HasSuffix(f.Name.Name, "_test"):
		to = &p.XTestImports
	default:
		to = &p.TestImports
	}
	for _, im := range f.Imports {
		path, err := strconv.Unquote(im.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		*to = append(*to, path)
	}
}

// impl says whether a package is the host's: its facade or implementation.
func impl(path string) bool {
	return strings.HasPrefix(path, "host/") || strings.HasPrefix(path, "internal/")
}

func local(path string) (string, bool) {
	if !strings.HasPrefix(path, mod) {
		return "", false
	}
	return strings.TrimPrefix(path, mod), true
}

// TestDependencyRules checks the arrows ARCHITECTURE.md says must never
// exist (non-test imports).
// streamHelpers read byte streams below the protocol: the protocol's own
// stdio and the transports share them, and internal/wire scans the JSON
// in them for every package that does.
var streamHelpers = map[string]bool{"internal/pollpipe": true, "internal/longframe": true, "internal/wire": true}

// authorTests run a filter or plugin author's code through the real host in
// the author's tests: public, since an author's module must import them,
// and built on the host's implementation, since that is what they test
// against.
var authorTests = map[string]bool{"sdk/filter/filtertest": true, "sdk/plugin/plugintest": true}

// sharedWire is what an SDK shares with the host under internal/: the
// protocol or ABI both sides must agree on, kept out of the author's API.
var sharedWire = map[string]bool{"sdk/plugin internal/pluginwire": true, "sdk/filter internal/filterabi": true, "sdk/filter internal/wire": true}

// consoleMay is what the console may import: the engine's packages it
// shows (and changes, through them), the gateway, config (to register its
// block), and the ground floor.
func consoleMay(to string) bool {
	switch to {
	case "internal/registry", "internal/audit", "internal/lock", "internal/policy", "internal/gateway", "internal/gateway/store",
		"internal/config", "internal/option", "internal/diag", "internal/bounded", "host/mcp", "sdk/event":
		return true
	}
	return false
}

// blockOwners keep the option table of a config block (issue 39): config
// imports them to decode and write the block, so they never import config.
var blockOwners = map[string]bool{"internal/lock": true, "internal/telemetry": true, "internal/sampling": true, "internal/audit": true, "internal/policy": true, "internal/plugin/block": true, "internal/gateway/block": true}

func TestDependencyRules(t *testing.T) {
	ps := packages(t)
	if len(ps) < 10 {
		t.Fatalf("go list found only %d packages", len(ps))
	}
	for _, e := range ruleErrors(ps) {
		t.Error(e)
	}
}

// ruleErrors is what TestDependencyRules says of ps: one line for each
// import that is an arrow ARCHITECTURE.md forbids. A test's imports are
// held to the same rules, but that it may use the test kits.
func ruleErrors(ps []pkg) []string {
	var errs []string
	localImports(ps, func(from, to string, test bool) {
		var bad string
		switch {
		case extension(from) && !publicPkg(to):
			bad = "extensions (examples, filters, plugins) import only the public surface (host, host/mcp, sdk/*) in every file, tests included: an extension is code to copy into another module, where its tests must build too"
		case test && !extension(from) && (testKits[to] || testClimbs[from+" "+to] != ""):
			// A test kit is there for tests, and a test climb is stated
			// with its reason; extensions are held to their own rules
			// below (their kits are public).
		case blockOwners[from] && to == "internal/config":
			bad = from + " owns its config block's option table, which internal/config imports to decode it; it never imports config back"
		case from == "host/mcp" && impl(to) && !streamHelpers[to]:
			bad = "host/mcp is the pure protocol and imports no other host package (but the stream readers under it)"
		case from == "internal/option" && to != "internal/diag":
			bad = "internal/option is the config vocabulary every owner may use and imports no other Nexus package but internal/diag (where a value is written)"
		case from == "internal/bounded" || from == "internal/filelock":
			bad = from + " is a leaf every part may use and imports no other Nexus package"
		case streamHelpers[from]:
			bad = from + " reads streams for the protocol and the transports alike, and imports no other Nexus package"
		case strings.HasPrefix(from, "internal/transport/") && impl(to) &&
			to != "host/mcp" && to != "internal/diag" && to != "internal/proc" && to != "internal/option" && to != "internal/bounded" && !streamHelpers[to] && !strings.HasPrefix(to, from):
			bad = "transports import only host/mcp, internal/diag, internal/proc, internal/option (to own their config), internal/bounded and the stream readers (internal/pollpipe, internal/longframe, internal/wire)"
		case from == "internal/proc":
			bad = "internal/proc starts processes for transports and plugins alike, and imports no other Nexus package"
		case strings.HasPrefix(from, "sdk/") && impl(to) && !authorTests[from] && !sharedWire[from+" "+to]:
			bad = "sdk packages never import the host (but the wire or ABI a plugin or filter speaks to it, and the helpers that run an author's code through it in tests)"
		case from == "internal/wasm" && to == "sdk/filter":
			bad = "the host's side of WASM filters speaks internal/filterabi and internal/wire, never the guest author's SDK"
		case from == "internal/filterabi" && to != "sdk/event":
			bad = "internal/filterabi is the WASM filter ABI, shared by the host and the guest SDK, and imports only sdk/event"
		case from == "internal/pluginwire" && impl(to):
			bad = "internal/pluginwire is the wire between host and plugin, shared by both sides, and imports no other Nexus package"
		case from == "internal/plugin" && to == "sdk/plugin":
			bad = "the host's side of plugins speaks internal/pluginwire, never the plugin author's SDK"
		case strings.HasPrefix(from, "internal/") && !strings.HasPrefix(from, "internal/cmd/") && to == "host":
			bad = "the implementation never imports the facade, which imports it (the gateway serves internal/engine's Host, as host does)"
		case to == "internal/engine" && from != "host" && from != "internal/gateway":
			bad = "internal/engine is the host the facade and the gateway drive; nothing else imports it (the command reaches it through host)"
		case strings.HasPrefix(from, "internal/console") && !strings.HasPrefix(to, "internal/console") && !consoleMay(to):
			bad = "the console shows the engine and the gateway, through their own packages (registry, audit, lock, gateway), and the ground floor's helpers; never host, a transport, plugins or WASM"
		case !strings.HasPrefix(from, "internal/console") && from != "host" && strings.HasPrefix(to, "internal/console"):
			bad = "only the facade imports the console: it registers its own config block (config.RegisterBlock), and host's Gateway hands it the engine and the gateway through its interfaces"
		case strings.HasPrefix(from, "filters/") && to != "sdk/filter" && to != "sdk/event" && to != "sdk/filter/redact" && !(test && publicPkg(to)):
			// redact is the one implementation of the secret detectors,
			// shared by the redact-secrets filter and the host's audit log.
			bad = "filters import only sdk/filter, sdk/filter/redact and sdk/event (and their tests the public surface: the kits, and host to load a config block as Nexus does)"
		case strings.HasPrefix(from, "plugins/") && !strings.HasPrefix(to, "sdk/") && !(test && publicPkg(to)):
			bad = "plugins import only sdk packages (and their tests the public surface: a client of host/mcp speaks to the server a transport plugin reaches)"
		}
		if bad != "" {
			errs = append(errs, fmt.Sprintf("%s %s %s: %s", from, imports(test), to, bad))
		}
	})
	return errs
}

// testKits are the packages that exist for tests: the environment
// (internal/testenv: the repository, tools, Redis, nginx), the servers
// tests run against, the README runner, and the kits an author's tests
// run a filter or plugin with. Any package's tests may import them,
// whatever their floor; an extension's only the public ones (sdk/*).
var testKits = map[string]bool{
	"internal/testenv": true, "internal/testserver": true, "internal/rawfake": true, "internal/taskfake": true,
	"internal/readmesh": true, "sdk/filter/filtertest": true, "sdk/plugin/plugintest": true,
}

// testClimbs are the tests that import a package their own may not, each
// with why: the test checks what that package, which uses theirs, makes
// of it. ARCHITECTURE.md lists them (TestRulesDocumented); an entry no
// test needs any more fails TestTestClimbsUsed.
var testClimbs = map[string]string{
	"internal/auth internal/explain":                       "the reports on OAuth's errors are built by explain, which imports auth",
	"internal/transport/httpserver internal/gateway/store": "replicas sharing sessions are tested against the gateway's real store",
	"internal/console internal/engine":                     "the console's benchmark serves a real engine and gateway, as host's Gateway hands them to it",
	"internal/console internal/transport/http":             "the console's end-to-end test speaks to `nexus serve` as an agent does, over streamable HTTP",
	"internal/gateway internal/console":                    "a refusal's report is the same in the audit log, the client's result and the console's page",
}

// extension says whether path is a folder to build and copy (an example,
// filter or plugin): it imports only what another module can.
func extension(path string) bool {
	top, _, _ := strings.Cut(path, "/")
	return top == "examples" || top == "filters" || top == "plugins"
}

func imports(test bool) string {
	if test {
		return "(its tests) imports"
	}
	return "imports"
}

// localImports calls f for each import of one of the module's packages
// by another, both relative to the repository's root: its own files'
// imports (test false), then its tests' (test true; both the package's
// _test.go files and the external test package's) that its own files do
// not make already.
func localImports(ps []pkg, f func(from, to string, test bool)) {
	for _, p := range ps {
		from, ok := local(p.ImportPath)
		if !ok {
			continue
		}
		seen := map[string]bool{from: true} // an external test imports its package
		for _, imp := range p.Imports {
			if to, ok := local(imp); ok && !seen[to] {
				seen[to] = true
				f(from, to, false)
			}
		}
		for _, imp := range append(p.TestImports[:len(p.TestImports):len(p.TestImports)], p.XTestImports...) {
			if to, ok := local(imp); ok && !seen[to] {
				seen[to] = true
				f(from, to, true)
			}
		}
	}
}

// Each package's comment is in its doc.go, and only there: one place to
// read what a package is for, and to keep it true. The benchmark and
// deployment modules are held to it too.
func TestPackageCommentsInDocGo(t *testing.T) {
	var ps []pkg
	for _, dir := range []string{".", "bench", "deploy"} {
		ps = append(ps, packagesIn(t, dir)...)
	}
	for _, p := range ps {
		var inDoc bool
		for _, f := range append(p.GoFiles, p.IgnoredGoFiles...) {
			af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Errorf("%s: %v", p.ImportPath, err)
				continue
			}
			switch {
			case f == "doc.go":
				want := "Package " + af.Name.Name + " "
				if af.Name.Name == "main" {
					want = "Command "
				}
				if inDoc = af.Doc != nil; inDoc && !strings.HasPrefix(af.Doc.Text(), want) {
					t.Errorf("%s: doc.go's comment starts %q; want %q", p.ImportPath, firstLine(af.Doc.Text()), want+"...")
				}
			case af.Doc != nil:
				t.Errorf("%s: %s has a package comment (%q); it belongs in doc.go alone", p.ImportPath, f, firstLine(af.Doc.Text()))
			}
		}
		if !inDoc {
			t.Errorf("%s: no doc.go with the package comment", p.ImportPath)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// public is everything the module lets another module import: the facade
// an embedder uses, the protocol library its signatures speak, and what
// filter and plugin authors write and test against. The implementation
// lives under internal/, where Go's rule keeps it private; extensions
// (filters/, plugins/) and examples/ are folders to build and copy, not
// libraries.
var public = map[string]string{
	"host":                  "the facade: load config, run the chain, serve as a gateway",
	"host/mcp":              "the protocol library the facade's signatures speak",
	"sdk/event":             "the event every policy and sanitizer sees",
	"sdk/filter":            "what a WASM filter author writes against",
	"sdk/filter/filtertest": "a filter author's tests",
	"sdk/filter/redact":     "the secret detectors, shared by the redact-secrets filter and the audit log",
	"sdk/plugin":            "what a plugin author writes against",
	"sdk/plugin/plugintest": "a plugin author's tests",
}

// publicPkg says whether another module may import path: the public
// surface, or an extension or example folder (the copies are theirs).
func publicPkg(path string) bool {
	top, _, _ := strings.Cut(path, "/")
	return public[path] != "" || top == "examples" || top == "filters" || top == "plugins"
}

func TestPublicSurface(t *testing.T) {
	for _, p := range packages(t) {
		path, ok := local(p.ImportPath)
		if !ok || p.Name == "main" || strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") {
			continue
		}
		if top, _, _ := strings.Cut(path, "/"); top == "examples" || top == "filters" || top == "plugins" {
			continue
		}
		if public[path] == "" {
			t.Errorf("%s can be imported by other modules but is not part of the public surface; move it under internal/ (or, if embedders or authors need it, add it to public with why)", path)
		}
	}
}

// hostFiles parses the host facade's files (this platform's, without
// tests), for the checks of its API.
func hostFiles(t *testing.T) (*token.FileSet, []*ast.File) {
	t.Helper()
	var files []*ast.File
	fset := token.NewFileSet()
	for _, p := range packages(t) {
		if p.ImportPath != mod+"host" {
			continue
		}
		for _, name := range p.GoFiles { // this platform's, without tests
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatal("go list found no files of host")
	}
	return fset, files
}

// TestFacadeNamesItsTypes: what the host facade's exported functions,
// methods and struct fields take and return is host's own type, so an
// embedder can write every type it meets, and no alias of an internal
// type makes an internal struct part of host's API (issue #39).
func TestFacadeNamesItsTypes(t *testing.T) {
	fset, files := hostFiles(t)
	for _, f := range files {
		internal := map[string]bool{} // local names of imported internal packages
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			local := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				local = im.Name.Name
			}
			internal[local] = true
		}
		check := func(where string, n ast.Node) {
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
						t.Errorf("%s: %s uses %s.%s; define host's own type for it and convert at the boundary", fset.Position(n.Pos()), where, id.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				check(d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					if ts.Assign != 0 {
						check(ts.Name.Name+" (an alias; define host's own type)", ts.Type)
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						check(ts.Name.Name, ts.Type)
						continue
					}
					for _, fld := range st.Fields.List {
						for _, fn := range fld.Names {
							if fn.IsExported() {
								check(ts.Name.Name+"."+fn.Name, fld.Type)
							}
						}
					}
				}
			}
		}
	}
}

func exportedRecv(r *ast.FieldList) bool {
	typ := r.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
