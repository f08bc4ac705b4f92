package diag

import (
	"regexp"
	"strconv"
	"strings"
)

// ServerCrashed reports a server process that exited while Nexus was
// talking to it. code is the exit code (-1 if it was killed by a signal),
// signal the signal's name ("" if none), stderr the lines it wrote to
// stderr, oldest first (only the last 10 are shown, but all are searched).
//
// The likely cause comes from recognizable messages in stderr: a refused
// connection, a port in use, a missing module, program or credential, a
// permission error. Patterns are tried in that order, so the first kind
// that appears anywhere in stderr wins.
func ServerCrashed(c Context, code int, signal string, stderr []string, cause error) *Report {
	r := c.report("MCP Server Crashed")
	r.Cause = cause

	switch {
	case signal != "":
		r.Problem = "Server was stopped by signal " + signal
	case code == 0:
		r.Problem = "Server exited with code 0 while the session was still open"
	case code > 0:
		r.Problem = "Server exited with code " + strconv.Itoa(code)
	default:
		r.Problem = "Server exited unexpectedly"
	}

	section, hasStderr := stderrSection(stderr)
	if !hasStderr {
		// Empty stderr is evidence too, so it is shown rather than left out.
		section = Section{Heading: "Server stderr", Lines: []string{"(empty)"}}
	}
	r.Details = append(r.Details, section)

	sig := strings.ToUpper(signal)
	if code == 137 || sig == "SIGKILL" || sig == "KILLED" { // 137 = 128 + SIGKILL, as a shell reports it
		r.Causes = append(r.Causes, "The server was killed (SIGKILL); often the system ran out of memory and stopped it")
		if c.goos() == "linux" {
			r.Fix = append(r.Fix, "Check for an out-of-memory kill: journalctl -k | grep -i 'killed process'")
		}
	}

	if why, fix := explainStderr(c, stderr); why != "" {
		r.Causes = append(r.Causes, why)
		r.Fix = append(r.Fix, fix...)
	} else if len(r.Causes) == 0 && hasStderr {
		r.Causes = []string{
			"The server hit an error it could not recover from; its stderr above usually names it",
			"The server was started with the wrong arguments, working directory (\"cwd\") or environment",
		}
	} else if len(r.Causes) == 0 {
		r.Causes = []string{
			"The server failed before it could report anything",
			"The command does not start an MCP server on stdin/stdout (it ran and exited)",
		}
	}

	if len(c.Command) > 0 {
		r.Fix = append(r.Fix, "Run the server by hand to see all of its output: "+c.commandLine())
	}
	r.Fix = append(r.Fix, "Check the server's documentation for required arguments and environment variables")
	return r
}

// A stderrPattern recognizes one kind of failure in a server's stderr and
// explains it. line is the first line that matched; loc the match in it.
type stderrPattern struct {
	re      *regexp.Regexp
	explain func(c Context, line string, loc []int) (cause string, fix []string)
}

var stderrPatterns = []stderrPattern{
	{regexp.MustCompile(`(?i)ECONNREFUSED|connection refused`), explainConnRefused},
	{regexp.MustCompile(`(?i)EADDRINUSE|address already in use`), explainAddrInUse},
	{regexp.MustCompile(`(?i)cannot find (module|package)|MODULE_NOT_FOUND|ModuleNotFoundError|No module named`), explainModule},
	{regexp.MustCompile(`(?i)command not found|: not found|ENOENT|is not recognized as an internal or external command`), explainMissingProgram},
	{regexp.MustCompile(`(?i)permission denied|EACCES|EPERM|access is denied`), explainPermission},
	{regexp.MustCompile(`(?i)environment variable|is not set|must be set|missing .*(key|token)|api[ _-]?key|unauthori[sz]ed|\b401\b`), explainCredential},
}

func explainStderr(c Context, stderr []string) (cause string, fix []string) {
	for _, p := range stderrPatterns {
		for _, line := range stderr {
			if loc := p.re.FindStringIndex(line); loc != nil {
				return p.explain(c, line, loc)
			}
		}
	}
	return "", nil
}

var (
	// hostPort finds "127.0.0.1:5432", "[::1]:5432", "db.local:5432" or
	// Node's ":::3000" (any address).
	hostPort = regexp.MustCompile(`(?i)(\[[0-9a-f:.]+\]|[a-z0-9][a-z0-9.-]*|::)?:(\d{1,5})\b`)
	portWord = regexp.MustCompile(`(?i)\bport\s+(\d{1,5})\b`)
)

// address finds the address a network error is about. It looks after the
// keyword first, since a line's leading timestamp ("12:34:56") also looks
// like host:port.
func address(line string, loc []int) (addr, port string) {
	if m := hostPort.FindStringSubmatch(line[loc[0]:]); m != nil {
		return m[0], m[2]
	}
	if m := portWord.FindStringSubmatch(line); m != nil {
		return "port " + m[1], m[1]
	}
	return "", ""
}

// wellKnown names the services behind the ports MCP servers most often
// connect to, with a command that checks the service is up and the
// variable servers conventionally read its address from.
var wellKnown = map[string]struct{ name, check, env, example string }{
	"5432":  {"PostgreSQL", "pg_isready -h HOST -p PORT", "DATABASE_URL", "postgresql://..."},
	"3306":  {"MySQL", "mysqladmin -h HOST -P PORT ping", "DATABASE_URL", "mysql://..."},
	"6379":  {"Redis", "redis-cli -h HOST -p PORT ping", "REDIS_URL", "redis://..."},
	"27017": {"MongoDB", "mongosh --host HOST --port PORT --eval 'db.runCommand({ping: 1})'", "MONGODB_URI", "mongodb://..."},
	"9200":  {"Elasticsearch", "curl -s http://HOST:PORT", "ELASTICSEARCH_URL", "http://..."},
	"11434": {"Ollama", "curl -s http://HOST:PORT/api/version", "OLLAMA_HOST", "http://..."},
}

func explainConnRefused(c Context, line string, loc []int) (string, []string) {
	addr, port := address(line, loc)
	svc, known := wellKnown[port]
	if !known {
		cause := "A service the server connects to is not running"
		check := "Check that the service is running and accepting connections"
		if addr != "" {
			cause += " (connection refused by " + addr + ")"
			check += " on " + addr
		}
		return cause, []string{
			check,
			"Verify the address the server is given, often in an environment variable",
			"Pass that variable to the server" + c.inFile() + " with " + c.key("env_passthrough", "stdio") + ", or set it in " + c.key("env", ""),
		}
	}
	host := "localhost"
	if h := strings.TrimSuffix(addr, ":"+port); h != addr {
		host = strings.Trim(h, "[]")
	}
	return svc.name + " is not running or not reachable (connection refused by " + addr + ")", []string{
		"Check if " + svc.name + " is running: " + strings.NewReplacer("HOST", host, "PORT", port).Replace(svc.check),
		"Verify the " + svc.env + " environment variable is set",
		"Pass it to the server" + c.inFile() + ": " + c.set("env_passthrough", jsonArray([]string{svc.env})),
		"Or set it explicitly: " + c.setMap("env", svc.env, quote(svc.example)),
	}
}

func explainAddrInUse(c Context, line string, loc []int) (string, []string) {
	addr, port := address(line, loc)
	cause := "The port the server listens on is already in use, perhaps by another copy of the server"
	if addr != "" {
		cause += " (" + addr + ")"
	}
	if port == "" {
		port = "PORT"
	}
	find := "Find what holds the port: lsof -i :" + port
	if c.windows() {
		find = "Find what holds the port: netstat -ano | findstr :" + port
	}
	return cause, []string{
		find,
		"Stop the other process, or configure the server to use another port",
	}
}

var (
	nodeModule   = regexp.MustCompile(`(?i)cannot find (?:module|package) '([^']+)'`)
	pythonModule = regexp.MustCompile(`No module named '?([\w.\-]+)'?`)
)

func explainModule(c Context, line string, loc []int) (string, []string) {
	if m := pythonModule.FindStringSubmatch(line); m != nil || strings.Contains(line, "ModuleNotFoundError") {
		cause := "A Python dependency of the server is not installed"
		install := "Install it into the Python environment the server runs in"
		if m != nil {
			pkg, _, _ := strings.Cut(m[1], ".") // mcp.server.fastmcp is in package mcp
			cause += " (module '" + m[1] + "')"
			install += ": python3 -m pip install " + pkg + "\n(the package name can differ from the module name)"
		}
		return cause, []string{
			install,
			"If the server has its own virtual environment, point " + c.key("command", "") + " at that environment's python",
		}
	}
	cause := "A Node.js dependency of the server is not installed"
	if m := nodeModule.FindStringSubmatch(line); m != nil {
		cause += " (module '" + m[1] + "')"
	}
	return cause, []string{
		"Install the server's dependencies: run npm install in the server's folder",
		"If the server runs through npx, check the package name and version in " + c.key("args", ""),
	}
}

var missingProgram = []*regexp.Regexp{
	regexp.MustCompile(`spawn (\S+) ENOENT`),
	regexp.MustCompile(`([^\s:]+): (?:command )?not found`),
	regexp.MustCompile(`'([^']+)' is not recognized as an internal or external command`),
}

func explainMissingProgram(c Context, line string, loc []int) (string, []string) {
	prog := ""
	for _, re := range missingProgram {
		if m := re.FindStringSubmatch(line); m != nil {
			prog = m[1]
			break
		}
	}
	if prog == "" {
		return "A program or file the server needs is missing", []string{
			"Check the path named in the message above exists",
			"If the server expects to run in a particular folder, set " + c.key("cwd", "stdio") + c.inFile(),
			"If it runs another program that is installed, pass your PATH: " + c.set("env_passthrough", `["PATH"]`),
		}
	}
	return "The server runs a program that is missing: " + prog, []string{
		"Install " + prog + ", or check that it is in PATH: " + c.which(prog),
		"Servers get a reduced environment; if " + prog + " is installed, pass your PATH" + c.inFile() +
			": " + c.set("env_passthrough", `["PATH"]`),
	}
}

func explainPermission(c Context, line string, loc []int) (string, []string) {
	return "The server was refused access to a file, folder or port (permission denied)", []string{
		"Check the permissions of the path named in the message above",
		"Ports below 1024 need extra privileges: configure the server to use a higher port",
	}
}

// envName finds an environment variable's name in a message: upper case
// with an underscore, as in GITHUB_TOKEN.
var envName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b`)

// rejected means a credential was sent and refused, rather than missing.
var rejected = regexp.MustCompile(`(?i)unauthori[sz]ed|\b401\b`)

func explainCredential(c Context, line string, loc []int) (string, []string) {
	name := envName.FindString(line)
	cause := "A required environment variable or credential is missing"
	if name != "" {
		cause += " (" + name + ")"
	} else {
		name = "VARIABLE_NAME"
	}
	fix := []string{
		"Set it for this server" + c.inFile() + ": " + c.setMap("env", name, `"..."`),
		"Or pass it from your environment: " + c.set("env_passthrough", jsonArray([]string{name})),
		"Nexus passes only a few safe variables (PATH, HOME, ...) to servers; others must be listed",
	}
	if rejected.MatchString(line) {
		fix = append(fix, "If it is set, check that the token or key is valid and has not expired")
	}
	return cause, fix
}
