package arch

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The Examples of a public package are code to copy into another module,
// where Go's rule keeps internal/ out of reach: a test file with an
// Example function imports no internal package (it starts what it needs
// with the public API, as host's do with an in-process host/mcp server).
func TestExamplesImportNoInternal(t *testing.T) {
	root := testenv.Root(t)
	var checked int
	for path := range public {
		dir := filepath.Join(root, filepath.FromSlash(path))
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			checked += examplesImportNoInternal(t, f)
		}
	}
	if checked == 0 {
		t.Fatal("found no Example functions in the public packages; the test looks in the wrong place")
	}
}

// examplesImportNoInternal reports an internal import of file, when it
// has Example functions, and says how many files it checked (0 or 1).
func examplesImportNoInternal(t *testing.T, file string) int {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var examples bool
	for _, d := range f.Decls {
		if name := funcName(d); name == "Example" || strings.HasPrefix(name, "Example_") ||
			(strings.HasPrefix(name, "Example") && len(name) > len("Example") && isUpper(name[len("Example")])) {
			examples = true
		}
	}
	if !examples {
		return 0
	}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		if rest, ok := strings.CutPrefix(p, mod); ok && (strings.HasPrefix(rest, "internal/") || strings.Contains(rest, "/internal/")) {
			t.Errorf("%s has Example functions and imports %s: an Example is code to copy into another module, which cannot import internal/ (start what it needs with the public API)", file, p)
		}
	}
	return 1
}

// funcName is the name of a function declaration (not a method); "" for
// anything else.
func funcName(d ast.Decl) string {
	if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
		return fd.Name.Name
	}
	return ""
}

func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }
