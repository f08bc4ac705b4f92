package diag

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// homeDir is replaceable so that tests render the same text on every
// machine.
var homeDir = os.UserHomeDir

// Source says where a piece of configuration came from. People keep several
// layered config files; naming the file and its layer is what lets them fix
// the right one.
type Source struct {
	File   string // path of the config file; "" for flags and built-ins
	Layer  string // "global", "project", "local", "flag", "embedded", ...
	Line   int    // 1-based; 0 if unknown
	Column int    // 1-based; 0 if unknown, ignored without Line
}

// layerNames describes the layers people know by another name; any other
// layer is shown as "<layer> config".
var layerNames = map[string]string{
	"flag":     "command-line flag",
	"embedded": "built-in default",
	"builtin":  "built-in default",
	"env":      "environment",
}

// HCL says whether the file is nexus.hcl syntax (a .hcl file), so that a
// fix can be written the way the file is.
func (s Source) HCL() bool { return strings.EqualFold(filepath.Ext(s.File), ".hcl") }

// String renders s as in "~/.nexus/mcp.json (global config), line 4". The
// home directory is shortened to ~ because that is how people type it. A
// zero Source renders as "".
func (s Source) String() string {
	var b strings.Builder
	if s.File != "" {
		b.WriteString(shortenHome(s.File))
	}
	if s.Layer != "" {
		name, ok := layerNames[s.Layer]
		if !ok {
			name = s.Layer + " config"
		}
		if b.Len() > 0 {
			b.WriteString(" (" + name + ")")
		} else {
			b.WriteString(name)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	if s.Line > 0 {
		b.WriteString(", line " + strconv.Itoa(s.Line))
		if s.Column > 0 {
			b.WriteString(", column " + strconv.Itoa(s.Column))
		}
	}
	return b.String()
}

func shortenHome(path string) string {
	home, err := homeDir()
	if err != nil {
		return path
	}
	home = strings.TrimRight(home, `/\`)
	if home == "" {
		return path // "/" is nobody's home worth shortening
	}
	if path == home {
		return "~"
	}
	if strings.HasPrefix(path, home) {
		if rest := path[len(home):]; rest[0] == '/' || rest[0] == '\\' {
			return "~" + rest
		}
	}
	return path
}
