package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"golang.org/x/tools/go/packages"
)

func main() {
	goos := flag.String("goos", "", "the GOOS to check for")
	goarch := flag.String("goarch", "", "the GOARCH to check for")
	flag.Parse()
	patterns := flag.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	if err := check(*goos, *goarch, patterns); err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(1)
	}
}

// check type-checks every package the patterns match, and every package
// they import, from source for goos/goarch: what `GOOS=... go build` finds
// wrong before it generates code, without generating it.
func check(goos, goarch string, patterns []string) error {
	env := append(os.Environ(), "CGO_ENABLED=0")
	if goos != "" {
		env = append(env, "GOOS="+goos)
	}
	if goarch != "" {
		env = append(env, "GOARCH="+goarch)
	}
	cfg := &packages.Config{
		// Syntax and types for every package, dependencies too: types of
		// dependencies from export data would compile them.
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps | packages.NeedSyntax | packages.NeedTypes,
		Env:  env,
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return err
	}
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("%s/%s: %d error(s):\n%s", goos, goarch, len(errs), strings.Join(errs, "\n"))
	}
	fmt.Printf("typecheck %s/%s: %d packages\n", goos, goarch, len(pkgs))
	return nil
}
