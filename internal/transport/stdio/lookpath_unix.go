//go:build unix

package stdio

import (
	"io/fs"
	"os"
	"strings"
)

func hasPathSep(name string) bool { return strings.Contains(name, "/") }

// pathExts: Unix has no PATHEXT; names are tried exactly as given.
func pathExts(string) []string { return nil }

// checkExecutable mirrors execve's rules closely enough to give a precise
// error before forking: a regular file with at least one execute bit (even
// root needs one).
func checkExecutable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "exec", Path: p, Err: errIsDir}
	}
	if fi.Mode()&0o111 == 0 {
		return &fs.PathError{Op: "exec", Path: p, Err: fs.ErrPermission}
	}
	return nil
}
