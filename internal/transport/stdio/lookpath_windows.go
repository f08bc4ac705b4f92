//go:build windows

package stdio

import (
	"io/fs"
	"os"
	"strings"
)

func hasPathSep(name string) bool { return strings.ContainsAny(name, `/\:`) }

// pathExts: CreateProcess does not apply PATHEXT itself, so "npx" must be
// turned into "npx.cmd" here.
func pathExts(v string) []string { return parsePathExt(v) }

// checkExecutable: Windows has no execute bit; the extension decides.
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "exec", Path: p, Err: errIsDir}
	}
	return nil
}
