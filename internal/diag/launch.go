package diag

import (
	"strings"
)

// CommandNotFound reports that the server's executable could not be found.
// pathSeen is the PATH the server process was given ("" if unknown): Nexus
// starts servers with a reduced environment, so it can differ from the
// reader's shell, and seeing it is usually the answer.
func CommandNotFound(c Context, executable, pathSeen string, cause error) *Report {
	r := c.report("MCP Server Launch Failed")
	r.Problem = "Command not found: " + executable
	r.Cause = cause
	name := toolName(executable)

	if hasDir(executable) {
		// PATH is not consulted for a path, so PATH advice would mislead.
		r.Causes = []string{
			"The file does not exist at that path",
			"A relative path is resolved from the server's working directory (\"cwd\"), not from the config file's folder",
		}
		if !c.windows() {
			// exec reports a missing #! interpreter as the script being missing.
			r.Causes = append(r.Causes, "The file is a script whose #! interpreter is not installed")
		}
		check := "ls -l " + shQuote(executable)
		if c.windows() {
			check = "dir " + cmdQuote(executable)
		}
		r.Fix = []string{
			"Check the path: " + check,
			"Use an absolute path in " + c.key("command", "stdio") + c.inFile(),
		}
		if !c.windows() {
			r.Fix = append(r.Fix, "For a script, check its first line (#!) names an installed interpreter")
		}
		return r
	}

	if pathSeen != "" {
		sep := ":"
		if c.windows() {
			sep = ";"
		}
		r.Details = []Section{{
			Heading: "PATH seen by the server",
			Lines:   strings.Split(pathSeen, sep),
		}}
	}

	if c.windows() {
		windowsCommandNotFound(c, r, executable, name)
		return r
	}

	install := installHints[name]
	if install == "" {
		install = "Install " + executable
	}
	r.Causes = []string{
		executable + " is not installed",
		executable + " is not in PATH for the MCP server process",
	}
	passthrough := c.set("env_passthrough", `["PATH"]`)
	if name == "npx" || name == "node" || name == "npm" {
		passthrough = c.set("env_passthrough", `["PATH", "NODE_PATH"]`)
	}
	r.Fix = []string{
		"Check if " + executable + " exists: " + c.which(executable),
		"If not installed: " + install,
		"If installed but not found: pass your PATH to the server" + c.inFile() + ":\n" + passthrough,
		"Or use the full path in " + c.key("command", "") + " (the output of command -v)",
	}
	return r
}

// windowsCommandNotFound adds the hints for Windows, where most failures
// are .cmd launchers (npx.cmd) that are found only when PATHEXT reaches the
// child process.
func windowsCommandNotFound(c Context, r *Report, executable, name string) {
	r.CausesHeading = "Windows-specific causes"
	r.FixHeading = "Fix options"

	hasExt := strings.Contains(executable, ".") // no directory part here
	install := installHints[name]
	switch {
	case nodeShims[name] && !hasExt:
		r.Causes = append(r.Causes, name+".cmd exists but PATHEXT is not passed to the subprocess")
	case !hasExt:
		r.Causes = append(r.Causes, executable+".cmd or "+executable+".bat exists but PATHEXT is not passed to the subprocess")
	}
	switch {
	case nodeShims[name] || name == "node":
		r.Causes = append(r.Causes, "Node.js is not installed or not in PATH")
	default:
		r.Causes = append(r.Causes, executable+" is not installed or not in PATH")
	}

	args := c.Command
	if len(args) == 0 {
		args = []string{executable}
	}
	full := `C:/full/path/to/` + name + ".exe"
	if nodeShims[name] {
		full = `C:/Program Files/nodejs/` + name + ".cmd"
	}
	r.Fix = []string{
		"Use the full command path: " + jsonArray(append([]string{full}, args[1:]...)),
		"Use the cmd wrapper: " + jsonArray(append([]string{"cmd", "/c"}, args...)),
		"Pass what Windows needs to find it" + c.inFile() + ": " + c.set("env_passthrough", `["PATHEXT", "APPDATA", "LOCALAPPDATA"]`),
		"Check if " + executable + " exists: " + c.which(executable),
	}
	if install != "" {
		r.Fix = append(r.Fix, "If not installed: "+install)
	}
}

// PermissionDenied reports that the server's executable exists but could
// not be run.
func PermissionDenied(c Context, executable string, cause error) *Report {
	r := c.report("MCP Server Launch Failed")
	r.Problem = "Permission denied when executing " + executable
	r.Cause = cause

	args := c.Command
	if len(args) == 0 {
		args = []string{executable}
	}
	viaInterpreter := jsonArray(append(c.interpreterFor(executable), args...))

	if c.windows() {
		r.Causes = []string{
			"Your account may not run the file (its security settings deny it)",
			"The file was downloaded and is blocked, or security software stopped it",
			"The path is a folder, not a program",
		}
		r.FixHeading = "Fix"
		r.Fix = []string{
			"Check the file's permissions: icacls " + cmdQuote(executable),
			"Or run it through its interpreter: " + viaInterpreter,
		}
		return r
	}

	r.Causes = []string{
		"The file is not executable",
		"The file is on a file system mounted noexec",
		"The path is a directory, not a program",
	}
	r.FixHeading = "Fix"
	r.Fix = []string{
		"Make it executable: chmod +x " + shQuote(executable),
		"Or run it through its interpreter: " + viaInterpreter,
	}
	return r
}
