package filter

import (
	"errors"
	"path"
	"strconv"
	"strings"
)

// Glob is a compiled path.Match pattern ("github.get_*", "*.delete_*",
// "db.[a-c]?"). Compile globs once, in the config handler: the common
// shapes (an exact name, a prefix or a suffix around one *) then match
// with a string comparison, which in WASM is many times cheaper than
// path.Match's byte-by-byte walk.
type Glob struct {
	pattern        string
	prefix, suffix string
	kind           uint8
}

const (
	globExact = iota // no metacharacters
	globAffix        // prefix*suffix, one star, no other metacharacters
	globGeneral
)

// ToolGlobs compiles "server.tool" globs, the patterns a config setting
// lists to name tools; an error names the setting and the pattern, and a
// pattern without a dot (a server's name alone) says how to write it.
func ToolGlobs(setting string, patterns []string) ([]Glob, error) {
	out := make([]Glob, 0, len(patterns))
	for _, p := range patterns {
		g, err := CompileGlob(p)
		if err != nil {
			return nil, errors.New("config: " + setting + ": bad glob " + strconv.Quote(p) + ": " + err.Error())
		}
		if !strings.Contains(p, ".") {
			return nil, errors.New("config: " + setting + ": " + strconv.Quote(p) + " has no dot; write \"server.tool\" (use \"" + p + ".*\" for every tool of a server)")
		}
		out = append(out, g)
	}
	return out, nil
}

// CompileGlob checks pattern and compiles it.
func CompileGlob(pattern string) (Glob, error) {
	if _, err := path.Match(pattern, ""); err != nil {
		return Glob{}, err
	}
	g := Glob{pattern: pattern, kind: globGeneral}
	switch {
	case !strings.ContainsAny(pattern, `*?[\`):
		g.kind = globExact
	case strings.Count(pattern, "*") == 1 && !strings.ContainsAny(pattern, `?[\`):
		i := strings.IndexByte(pattern, '*')
		g.prefix, g.suffix = pattern[:i], pattern[i+1:]
		if !strings.Contains(g.prefix, "/") && !strings.Contains(g.suffix, "/") {
			g.kind = globAffix
		}
	}
	return g, nil
}

// Match reports whether s matches the glob, exactly as path.Match would.
func (g Glob) Match(s string) bool {
	switch g.kind {
	case globExact:
		return s == g.pattern
	case globAffix:
		// path.Match's * does not cross a /.
		return len(s) >= len(g.prefix)+len(g.suffix) && strings.HasPrefix(s, g.prefix) && strings.HasSuffix(s, g.suffix) &&
			!strings.Contains(s[len(g.prefix):len(s)-len(g.suffix)], "/")
	}
	ok, _ := path.Match(g.pattern, s)
	return ok
}

// String is the pattern.
func (g Glob) String() string { return g.pattern }
