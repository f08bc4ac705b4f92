package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// floor is one line of ARCHITECTURE.md's map: its name and the packages
// on it (a path, or path/... for the folder and everything under it).
type floor struct {
	name  string
	paths []string
}

func (f floor) has(path string) bool {
	for _, p := range f.paths {
		if dir, ok := strings.CutSuffix(p, "/..."); ok {
			if path == dir || strings.HasPrefix(path, dir+"/") {
				return true
			}
		} else if path == p {
			return true
		}
	}
	return false
}

// floorsOf reads the map of floors from the ```floors block of doc, top
// floor first as the document draws it; the result is bottom first, so
// a floor's index is its height.
func floorsOf(t *testing.T, doc string) []floor {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "```floors\n")
	if !ok {
		t.Fatal("ARCHITECTURE.md has no ```floors block: the map of floors this test checks")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("ARCHITECTURE.md's ```floors block does not end")
	}
	// A line is "name: paths", or more paths of the floor above it;
	// "#" starts a comment.
	var fs []floor
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		name, list, ok := strings.Cut(line, ":")
		switch {
		case ok:
			fs = append([]floor{{name: strings.TrimSpace(name)}}, fs...)
		case len(fs) == 0 && strings.TrimSpace(line) != "":
			t.Fatalf("ARCHITECTURE.md's ```floors block starts with %q, not a floor's name", line)
		default:
			list = line
		}
		for _, p := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			fs[0].paths = append(fs[0].paths, p)
		}
	}
	if len(fs) < 3 {
		t.Fatalf("ARCHITECTURE.md's map has %d floors", len(fs))
	}
	return fs
}

func architecture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.Root(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFloors holds ARCHITECTURE.md to the tree, so that it cannot go stale
// unnoticed: every package is on exactly one floor of its map, no import
// climbs to a floor above its importer's (a test's imports included, but
// that a test may use the test kits), and every floor names a package
// that exists.
func TestFloors(t *testing.T) {
	for _, e := range floorErrors(floorsOf(t, architecture(t)), packages(t)) {
		t.Error(e)
	}
}

// floorErrors is what TestFloors says of the packages ps on the floors fs.
func floorErrors(fs []floor, ps []pkg) []string {
	var errs []string
	level := map[string]int{}
	used := make([]bool, len(fs))
	for _, p := range ps {
		path, ok := local(p.ImportPath)
		if !ok {
			continue
		}
		var on []string
		for i, f := range fs {
			if f.has(path) {
				on = append(on, f.name)
				level[path] = i
				used[i] = true
			}
		}
		switch len(on) {
		case 0:
			errs = append(errs, fmt.Sprintf("%s is on no floor of ARCHITECTURE.md's map: add it to the floor it belongs on", path))
		case 1:
		default:
			errs = append(errs, fmt.Sprintf("%s is on several floors of ARCHITECTURE.md's map: %v", path, on))
		}
	}
	for i, u := range used {
		if !u {
			errs = append(errs, fmt.Sprintf("floor %q of ARCHITECTURE.md's map names no package of the tree", fs[i].name))
		}
	}
	localImports(ps, func(from, to string, test bool) {
		lf, lt := level[from], level[to]
		switch {
		case lt <= lf:
		case !test:
			errs = append(errs, fmt.Sprintf("%s (floor %q) imports %s (floor %q, above it): imports only go down the floors of ARCHITECTURE.md", from, fs[lf].name, to, fs[lt].name))
		case !testKits[to] && testClimbs[from+" "+to] == "":
			errs = append(errs, fmt.Sprintf("%s (floor %q) has a test that imports %s (floor %q, above it): a test's imports go down the floors of ARCHITECTURE.md too, but for the test kits and the climbs ARCHITECTURE.md lists with their reasons (internal/arch testKits, testClimbs)", from, fs[lf].name, to, fs[lt].name))
		}
	})
	return errs
}

// TestRulesDocumented: each arrow TestDependencyRules forbids is stated in
// ARCHITECTURE.md in the words the test fails with, so that a rule added
// or changed there shows up in the document a reader starts from.
func TestRulesDocumented(t *testing.T) {
	doc := oneSpaced(architecture(t))
	for _, rule := range ruleTexts(t) {
		if !strings.Contains(doc, oneSpaced(rule)) {
			t.Errorf("ARCHITECTURE.md does not state the rule %q (internal/arch/arch_test.go); add it to its rules", rule)
		}
	}
}

// TestTestClimbsUsed: each test climb ARCHITECTURE.md allows is one a
// test makes, and is stated there with its reason, so that the list is the
// tree's and shrinks when a test no longer needs its climb.
func TestTestClimbsUsed(t *testing.T) {
	made := map[string]bool{}
	localImports(packages(t), func(from, to string, test bool) {
		if test {
			made[from+" "+to] = true
		}
	})
	doc := oneSpaced(architecture(t))
	for climb, why := range testClimbs {
		from, to, _ := strings.Cut(climb, " ")
		if !made[climb] {
			t.Errorf("no test of %s imports %s any more: remove the climb from testClimbs (internal/arch) and ARCHITECTURE.md", from, to)
		}
		if line := from + "'s tests import " + to + ": " + why; !strings.Contains(doc, oneSpaced(line)) {
			t.Errorf("ARCHITECTURE.md does not state the test climb %q; add it to its list of test climbs", line)
		}
	}
}

var spaces = regexp.MustCompile(`\s+`)

// oneSpaced is s with each run of white space one space, and without
// Markdown's code quotes: a rule may wrap, and name packages as code.
func oneSpaced(s string) string {
	return strings.TrimSpace(spaces.ReplaceAllString(strings.ReplaceAll(s, "`", ""), " "))
}

// ruleTexts are the string literals TestDependencyRules assigns to bad:
// what it says when an arrow it forbids exists.
func ruleTexts(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(testenv.Root(t), "internal", "arch", "arch_test.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return true
		}
		if id, ok := as.Lhs[0].(*ast.Ident); !ok || id.Name != "bad" {
			return true
		}
		ast.Inspect(as.Rhs[0], func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				if s = strings.TrimSpace(s); s != "" {
					out = append(out, s)
				}
			}
			return true
		})
		return true
	})
	if len(out) < 10 {
		t.Fatalf("found %d rules in arch_test.go; the test reads it wrong", len(out))
	}
	return out
}
