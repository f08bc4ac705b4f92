package diag

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Context carries what every report about one server shares. Callers fill
// it once from the server's config (and its origin) and pass it to the
// constructors.
type Context struct {
	Server  string
	Source  Source
	Command []string
	URL     string

	// GOOS selects platform-specific hints; "" means runtime.GOOS. Tests set
	// it to render the Windows wording on any machine.
	GOOS string
}

func (c Context) report(title string) *Report {
	return &Report{
		Title:   title,
		Server:  c.Server,
		Source:  c.Source,
		Command: c.Command,
		URL:     c.URL,
	}
}

func (c Context) goos() string {
	if c.GOOS == "" {
		return runtime.GOOS
	}
	return c.GOOS
}

func (c Context) windows() bool { return c.goos() == "windows" }

// inFile names the config file for a fix ("in ~/.nexus/mcp.json"), so the
// reader edits the layer the server actually came from.
func (c Context) inFile() string {
	if c.Source.File == "" {
		return ""
	}
	return " in " + shortenHome(c.Source.File)
}

// commandLine is the server's command as a person would type it in their
// shell, for "run it by hand" advice.
func (c Context) commandLine() string {
	q := make([]string, len(c.Command))
	for i, a := range c.Command {
		if c.windows() {
			q[i] = cmdQuote(a)
		} else {
			q[i] = shQuote(a)
		}
	}
	return strings.Join(q, " ")
}

// which is the command that tells whether prog is in PATH.
func (c Context) which(prog string) string {
	if c.windows() {
		return "where " + cmdQuote(prog)
	}
	return "command -v " + shQuote(prog)
}

// shQuote quotes a for a POSIX shell, leaving plain words alone so the
// common case stays readable.
func shQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// cmdQuote quotes a for cmd.exe and the usual Windows argument parsing.
func cmdQuote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\"&|<>^%") {
		return a
	}
	return `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
}

// toolName reduces an executable to the name people know it by:
// "/usr/local/bin/npx", "npx.cmd" and "NPX.EXE" are all "npx".
func toolName(exe string) string {
	base := exe
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.ToLower(base)
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// hasDir reports whether exe is a path rather than a name looked up in
// PATH; then PATH advice would be wrong.
func hasDir(exe string) bool { return strings.ContainsAny(exe, `/\`) }

// installHints says where the commonly used launchers come from. Most
// command-not-found reports in practice are one of these.
var installHints = map[string]string{
	"nexus":   "Build it in your Nexus checkout with make build (it writes bin/nexus), then add bin/ to PATH or use bin/nexus's full path",
	"npx":     "Install Node.js from https://nodejs.org (npx comes with it)",
	"npm":     "Install Node.js from https://nodejs.org (npm comes with it)",
	"node":    "Install Node.js from https://nodejs.org",
	"pnpm":    "Install pnpm: https://pnpm.io/installation",
	"yarn":    "Install Yarn: https://yarnpkg.com",
	"bun":     "Install Bun from https://bun.sh",
	"bunx":    "Install Bun from https://bun.sh (bunx comes with it)",
	"deno":    "Install Deno from https://deno.com",
	"uvx":     "Install uv from https://docs.astral.sh/uv/ (uvx comes with it)",
	"uv":      "Install uv from https://docs.astral.sh/uv/",
	"python":  "Install Python from https://www.python.org/downloads/",
	"python3": "Install Python from https://www.python.org/downloads/",
	"pipx":    "Install pipx: https://pipx.pypa.io",
	"docker":  "Install Docker: https://docs.docker.com/get-docker/",
}

// nodeShims are the launchers that Windows installs as .cmd scripts, which
// are only found when PATHEXT lists .CMD.
var nodeShims = map[string]bool{"npx": true, "npm": true, "pnpm": true, "yarn": true, "corepack": true}

// interpreters maps script extensions to the program that runs them, for
// "run it through its interpreter" advice.
var interpreters = map[string]string{
	".py":   "python3",
	".js":   "node",
	".mjs":  "node",
	".cjs":  "node",
	".ts":   "npx tsx",
	".sh":   "sh",
	".bash": "bash",
	".rb":   "ruby",
	".pl":   "perl",
	".php":  "php",
	".ps1":  "powershell -File",
}

func (c Context) interpreterFor(exe string) []string {
	ext := strings.ToLower(filepath.Ext(strings.ReplaceAll(exe, `\`, "/")))
	in, ok := interpreters[ext]
	if !ok {
		return []string{"<interpreter>"}
	}
	if in == "python3" && c.windows() {
		in = "python" // the Windows installer does not create python3
	}
	return strings.Fields(in)
}

// tail returns the last n lines, dropping trailing blank lines first (a
// final newline in the stream is not a line worth a slot).
func tail(lines []string, n int) (shown []string, truncated bool) {
	end := len(lines)
	for end > 0 && strings.TrimSpace(lines[end-1]) == "" {
		end--
	}
	lines = lines[:end]
	if len(lines) > n {
		return lines[len(lines)-n:], true
	}
	return lines, false
}

// stderrSection shows the tail of a server's stderr, which is usually where
// the real reason is.
func stderrSection(stderr []string) (Section, bool) {
	lines, truncated := tail(stderr, 10)
	if len(lines) == 0 {
		return Section{}, false
	}
	heading := "Server stderr"
	if truncated {
		heading = "Server stderr (last 10 lines)"
	}
	return Section{Heading: heading, Lines: lines}, true
}

// seconds renders a timeout the way people say it ("30 seconds",
// "1.5 seconds"); under a second or over ten minutes, Go's own form reads
// better ("500ms", "1h0m0s").
func seconds(d time.Duration) string {
	if d < time.Second || d > 10*time.Minute {
		return d.String()
	}
	s := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	if s == "1" {
		return "1 second"
	}
	return s + " seconds"
}

// Fixes quote settings in the syntax of the file the server came from:
// HCL for a .hcl file, JSON otherwise (and when the file is unknown, since
// most people start from a client's JSON config).

// hcl says whether the server's file is HCL.
func (c Context) hcl() bool { return c.Source.HCL() }

// key names a setting as the file spells it: "env" in JSON, env in HCL,
// where block says which block of the server holds it (stdio, http).
func (c Context) key(name, block string) string {
	if c.hcl() {
		if block != "" {
			return name + " (in the " + block + " block)"
		}
		return name
	}
	return `"` + name + `"`
}

// set renders a setting with its value, which is written the same way in
// both (a string, a number or a list).
func (c Context) set(name, value string) string {
	if c.hcl() {
		return name + " = " + value
	}
	return `"` + name + `": ` + value
}

// setMap renders a map setting with one entry.
func (c Context) setMap(name, key, value string) string {
	if c.hcl() {
		return name + " = { " + key + " = " + value + " }"
	}
	return `"` + name + `": {"` + key + `": ` + value + `}`
}
