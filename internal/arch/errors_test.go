package arch

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestFacadeConvertsErrors: every error the host facade's exported
// functions and methods return goes through hostErr, which puts host's
// own type around each engine error a caller branches on, or is host's
// own: nil, a host type or variable, a message made there (fmt.Errorf
// without %w, errors.New), or what another function of host returns,
// itself held to the same rule. A bare `return err` fails, even one
// that is harmless today: the engine's next typed error would reach the
// embedder as a type it cannot name (issue 39's facade; host's
// TestFacadeErrors calls each function to prove the conversion).
func TestFacadeConvertsErrors(t *testing.T) {
	fset, files := hostFiles(t)
	for _, e := range unconverted(fset, files) {
		t.Error(e)
	}
}

// TestUnconvertedFinds: the check above on a made-up facade finds each
// way an error escapes unconverted, and passes each way it does not.
func TestUnconvertedFinds(t *testing.T) {
	const src = `package host

import (
	"errors"
	"fmt"

	"example.com/internal/engine"
)

var ErrClosed = errors.New("closed")

type H struct{ e *engine.Host }
type NotFoundError struct{ Name string }
type hidden struct{}

func (e *NotFoundError) Error() string { return e.Name }
func (e *NotFoundError) Unwrap() error { return engine.Err } // an Unwrap is the chain, not a result

func Good(h *H, name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	if name == "x" {
		return 0, &NotFoundError{Name: name}
	}
	if name == "y" {
		return 0, fmt.Errorf("no %s here", name)
	}
	if name == "z" {
		return 0, ErrClosed
	}
	if name == "w" {
		return wrap(h.e.Count(name))
	}
	n, err := h.e.Count(name)
	return n, hostErr(err)
}

func wrap(n int, err error) (int, error) { return n, hostErr(err) }

func (h *H) Good2() error { return h.good3() }
func (h *H) good3() error { return hostErr(h.e.Close()) }

func (h *H) Bare() error {
	err := h.e.Close()
	return err
}

func Wrapped(h *H) error {
	if err := h.e.Close(); err != nil {
		return fmt.Errorf("closing: %w", err)
	}
	return nil
}

func Direct(h *H) (int, error) { return h.e.Count("a") }

func Helper(h *H) error { return leak(h) }

func leak(h *H) error { return h.e.Close() }

func Named(h *H) (n int, err error) {
	n, err = h.e.Count("a")
	return
}

func Closure(h *H) error {
	f := func() error { return h.e.Close() } // runs inside: its result is what is checked
	return hostErr(f())
}

func (hidden) Unexported() error { var err error; return err }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "h.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range unconverted(fset, []*ast.File{f}) {
		where, _, _ := strings.Cut(e, ": ")
		got = append(got, where)
	}
	want := []string{"h.go:46:2 (Bare)", "h.go:51:3 (Wrapped)", "h.go:56:34 (Direct)", "h.go:60:25 (leak, which Helper returns)", "h.go:64:2 (Named)"}
	if !slices.Equal(got, want) {
		t.Errorf("found %q\nwant  %q\n%s", got, want, strings.Join(unconverted(fset, []*ast.File{f}), "\n"))
	}
}

// unconverted lists each return of an exported function or method of an
// exported type in files (package host) whose error may be the engine's
// unconverted: where, and why.
func unconverted(fset *token.FileSet, files []*ast.File) []string {
	funcs := map[string]*ast.FuncDecl{} // by name, or Type.name for a method
	vars := map[string]bool{}           // package-level variables
	types := map[string]bool{}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				funcs[key(d)] = d
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						if d.Tok == token.VAR {
							for _, n := range s.Names {
								vars[n.Name] = true
							}
						}
					case *ast.TypeSpec:
						types[s.Name.Name] = true
					}
				}
			}
		}
	}
	var out []string
	checked := map[string]bool{}
	var check func(d *ast.FuncDecl, via string)
	check = func(d *ast.FuncDecl, via string) {
		if checked[key(d)] || !returnsError(d) || d.Name.Name == "Unwrap" || d.Body == nil {
			return
		}
		checked[key(d)] = true
		name := d.Name.Name
		if via != "" {
			name += ", which " + via + " returns"
		}
		recv := ""
		if d.Recv != nil && len(d.Recv.List[0].Names) > 0 {
			recv = d.Recv.List[0].Names[0].Name
		}
		bad := func(n ast.Node, why string) {
			out = append(out, fmt.Sprintf("%s (%s): %s", fset.Position(n.Pos()), name, why))
		}
		ast.Inspect(d.Body, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false // a closure's returns are its own
			case *ast.ReturnStmt:
				if len(n.Results) == 0 {
					bad(n, "a bare return; return the error as hostErr(err)")
					return true
				}
				e := n.Results[len(n.Results)-1] // a call's own results when it is the only one
				if callee := hostCall(e, recv, d, funcs); callee != nil {
					check(callee, d.Name.Name)
					return true
				}
				if why := escapes(e, vars, types); why != "" {
					bad(n, why)
				}
			}
			return true
		})
	}
	for _, f := range files {
		for _, d := range f.Decls {
			if d, ok := d.(*ast.FuncDecl); ok && d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
				check(d, "")
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(a, b) })
	return out
}

// escapes says why e, a returned error, may be the engine's as it came;
// "" when it is host's own.
func escapes(e ast.Expr, vars, types map[string]bool) string {
	const fix = "return it as hostErr(...), which names the engine's errors with host's types"
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		if e.Name == "nil" || vars[e.Name] {
			return ""
		}
		return fmt.Sprintf("returns %s as it came; %s", e.Name, fix)
	case *ast.UnaryExpr:
		if lit, ok := e.X.(*ast.CompositeLit); ok && e.Op == token.AND {
			if id, ok := lit.Type.(*ast.Ident); ok && types[id.Name] {
				return "" // host's own type
			}
		}
	case *ast.CallExpr:
		switch fn := e.Fun.(type) {
		case *ast.Ident:
			if fn.Name == "hostErr" {
				return ""
			}
		case *ast.SelectorExpr:
			pkg, _ := fn.X.(*ast.Ident)
			switch {
			case pkg != nil && pkg.Name == "errors" && fn.Sel.Name == "New":
				return ""
			case pkg != nil && pkg.Name == "fmt" && fn.Sel.Name == "Errorf":
				if len(e.Args) > 0 {
					if lit, ok := e.Args[0].(*ast.BasicLit); ok {
						if s, err := strconv.Unquote(lit.Value); err == nil && !strings.Contains(s, "%w") {
							return "" // a message of host's, wrapping nothing
						}
					}
				}
				return "wraps an error with %w, which may be the engine's; " + fix
			}
		}
		return "returns what " + exprString(e.Fun) + " returned; " + fix
	}
	return "returns an error host did not make; " + fix
}

// hostCall is the function or method of host that e calls, when e is a
// call of one (by name, or on the receiver recv): its returns are then
// held to the rule instead.
func hostCall(e ast.Expr, recv string, d *ast.FuncDecl, funcs map[string]*ast.FuncDecl) *ast.FuncDecl {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return nil
	}
	fun := call.Fun
	switch f := fun.(type) {
	case *ast.IndexExpr:
		fun = f.X
	case *ast.IndexListExpr:
		fun = f.X
	}
	switch f := fun.(type) {
	case *ast.Ident:
		if f.Name != "hostErr" {
			return funcs[f.Name]
		}
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && recv != "" && x.Name == recv {
			return funcs[recvType(d.Recv)+"."+f.Sel.Name]
		}
	}
	return nil
}

func key(d *ast.FuncDecl) string {
	if d.Recv == nil {
		return d.Name.Name
	}
	return recvType(d.Recv) + "." + d.Name.Name
}

func recvType(r *ast.FieldList) string {
	typ := r.List[0].Type
	if s, ok := typ.(*ast.StarExpr); ok {
		typ = s.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// returnsError says whether d's last result is an error.
func returnsError(d *ast.FuncDecl) bool {
	rs := d.Type.Results
	if rs == nil || len(rs.List) == 0 {
		return false
	}
	id, ok := rs.List[len(rs.List)-1].Type.(*ast.Ident)
	return ok && id.Name == "error"
}

func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return exprString(e.Fun) + "()"
	}
	return "the call"
}
