package stdio

import (
	"errors"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
)

// errIsDir: a directory on PATH with the command's name is skipped, like a
// shell does; named explicitly it cannot be run.
var errIsDir = errors.New("is a directory")

// resolveCommand finds the executable for name the way the child's own
// environment would, not the host's: the host may have a richer PATH than the
// sanitized one the server gets, and a command that only resolves through the
// host's PATH would start but then fail to find its own helpers. A name with
// a path separator is taken relative to dir, like the child sees it.
//
// Relative and empty PATH entries are ignored: they mean "the current
// directory", and resolving a command there would let whatever directory the
// host was started in decide what runs (the same policy as os/exec's ErrDot).
func resolveCommand(name, dir string, env []string) (string, StartErrorKind, error) {
	exts := pathExts(lookupEnv(env, "PATHEXT", foldEnvCase))
	if hasPathSep(name) {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", Other, err
		}
		path, err := firstExecutable(withExts(abs, exts))
		switch {
		case err == nil:
			return path, 0, nil
		case errors.Is(err, fs.ErrPermission), errors.Is(err, errIsDir):
			return "", PermissionDenied, err
		case errors.Is(err, fs.ErrNotExist):
			return "", NotFound, err
		default:
			return "", Other, err
		}
	}
	var denied error
	for _, d := range filepath.SplitList(lookupEnv(env, "PATH", foldEnvCase)) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		path, err := firstExecutable(withExts(filepath.Join(d, name), exts))
		if err == nil {
			return path, 0, nil
		}
		// Keep searching: a later entry may hold an executable copy, which
		// is what execvp would run.
		if denied == nil && errors.Is(err, fs.ErrPermission) {
			denied = err
		}
	}
	if denied != nil {
		return "", PermissionDenied, denied
	}
	return "", NotFound, exec.ErrNotFound
}

// firstExecutable returns the first runnable candidate, else the most
// telling error: permission problems beat "does not exist".
func firstExecutable(candidates []string) (string, error) {
	var firstErr error
	for _, p := range candidates {
		err := checkExecutable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil || (errors.Is(firstErr, fs.ErrNotExist) && !errors.Is(err, fs.ErrNotExist)) {
			firstErr = err
		}
	}
	return "", firstErr
}

// withExts lists the files Windows would try for p: p itself only if it
// already has an extension (so the extensionless shell script npm installs
// next to npx.cmd is never picked), then p plus each PATHEXT extension.
func withExts(p string, exts []string) []string {
	if len(exts) == 0 {
		return []string{p}
	}
	var c []string
	if filepath.Ext(p) != "" {
		c = append(c, p)
	}
	for _, e := range exts {
		c = append(c, p+e)
	}
	return c
}

// parsePathExt turns a PATHEXT value into lower-case extensions with a
// leading dot, defaulting to what cmd.exe uses when it is unset.
func parsePathExt(v string) []string {
	var exts []string
	for _, e := range strings.Split(strings.ToLower(v), ";") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	if len(exts) == 0 {
		return []string{".com", ".exe", ".bat", ".cmd"}
	}
	return exts
}
