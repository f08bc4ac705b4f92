package plugin

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// LoadErrorKind says why a plugin could not be launched, so callers and
// tests can tell the cases apart without reading messages.
type LoadErrorKind int

const (
	LoadOther            LoadErrorKind = iota
	LoadNotFound                       // no file at the path
	LoadNotExecutable                  // a directory, or no execute permission
	LoadChecksumMissing                // config pins no sha256 and the host does not allow that
	LoadChecksumMismatch               // the file's sha256 differs from the pinned one; it never ran
	LoadNotAPlugin                     // it ran but did not answer the handshake
	LoadVersion                        // it speaks no protocol version this host does
	LoadTimeout                        // it did not finish the handshake within the start timeout
	LoadExited                         // it exited during start
	LoadBadPlugin                      // it answered the handshake but broke the Nexus protocol
	LoadReattach                       // NEXUS_REATTACH_PLUGINS names it but it cannot be reached
)

func (k LoadErrorKind) String() string {
	return [...]string{"other", "not found", "not executable", "checksum missing", "checksum mismatch",
		"not a plugin", "protocol version", "start timeout", "exited at start", "bad plugin", "reattach"}[k]
}

// LoadError is a plugin that could not be launched. Open returns it inside
// a *diag.Report that says what to do about it.
type LoadError struct {
	Plugin string
	Path   string
	Kind   LoadErrorKind
	Stderr []string // the last lines the plugin wrote to stderr, if it ran
	Err    error
}

func (e *LoadError) Unwrap() error { return e.Err }

func (e *LoadError) Error() string {
	s := "plugin " + strconv.Quote(e.Plugin) + " (" + e.Path + "): " + e.Kind.String()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if t := tail(e.Stderr); t != "" {
		s += "; last stderr: " + t
	}
	return s
}

// CrashError reports a plugin process that exited while the host was using
// it. Calls in flight fail with it at once; the plugin is restarted with
// backoff and the next use gets the new process.
type CrashError struct {
	Plugin string
	During string   // what was in flight ("policy Decide", "transport stream"), "" if nothing
	Exit   string   // "exit status 2", "signal: killed"
	Stderr []string // its last stderr lines, oldest first
}

func (e *CrashError) Error() string {
	var b strings.Builder
	b.WriteString("plugin " + strconv.Quote(e.Plugin) + " crashed")
	if e.During != "" {
		b.WriteString(" during " + e.During)
	}
	if e.Exit != "" {
		b.WriteString(" (" + e.Exit + ")")
	}
	if t := tail(e.Stderr); t != "" {
		b.WriteString("; last stderr: " + t)
	} else {
		b.WriteString("; it wrote nothing to stderr")
	}
	b.WriteString("; it is being restarted")
	return b.String()
}

// CodePluginCrashed is the JSON-RPC error code of requests that were in
// flight on a transport plugin when it crashed (a server-defined code).
const CodePluginCrashed = -32001

// RPCError is the JSON-RPC error that requests in flight receive: its
// message names the plugin and its last stderr lines; data carries them as
// fields.
func (e *CrashError) RPCError() *mcp.RPCError {
	data, _ := json.Marshal(map[string]any{"plugin": e.Plugin, "exit": e.Exit, "stderr": e.Stderr})
	return &mcp.RPCError{Code: CodePluginCrashed, Message: e.Error(), Data: data}
}

// Report renders the crash for a person.
func (e *CrashError) Report() *diag.Report {
	r := &diag.Report{
		Title:   "Plugin Crashed",
		Problem: "Plugin " + strconv.Quote(e.Plugin) + " exited",
		Cause:   e,
	}
	if e.During != "" {
		r.Problem += " during " + e.During
	}
	if e.Exit != "" {
		r.Problem += " (" + e.Exit + ")"
	}
	r.Details = []diag.Section{stderrSection(e.Stderr)}
	r.Causes = []string{"A bug in the plugin; its stderr above usually shows the panic or error"}
	r.Fix = []string{"The host restarts the plugin with backoff; calls succeed again once it is back",
		"Run with --log-level debug to see everything the plugin logs"}
	return r
}

// ConfigError is a config block that fails the plugin's JSON Schema.
type ConfigError struct {
	Plugin   string
	Kind     string // transport, policy, sanitizer
	User     string // the server or filter that holds the config
	Source   diag.Source
	Pointer  string   // JSON pointer of the config block in its server or filter ("/plugin/config")
	Problems []string // "/url: missing property", each at its JSON pointer
}

func (e *ConfigError) Error() string {
	return "plugin " + strconv.Quote(e.Plugin) + " " + e.Kind + " config of " + e.User + " is invalid: " + strings.Join(e.Problems, "; ")
}

// Report renders the error with the config file and line.
func (e *ConfigError) Report() *diag.Report {
	r := &diag.Report{
		Title:   "Plugin Config Invalid",
		Source:  e.Source,
		Problem: "The " + e.Kind + " config of " + e.User + " does not match the schema of plugin " + strconv.Quote(e.Plugin),
		Details: []diag.Section{{Heading: "Schema errors (at " + orRoot(e.Pointer) + ")", Lines: e.Problems}},
		Fix: []string{"Fix the config block at the source above",
			"`nexus plugin inspect PATH` prints the plugin's config schema"},
		Cause: e,
	}
	return r
}

func orRoot(p string) string {
	if p == "" {
		return "the config"
	}
	return p
}

func stderrSection(lines []string) diag.Section {
	if len(lines) == 0 {
		return diag.Section{Heading: "Plugin stderr", Lines: []string{"(empty)"}}
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return diag.Section{Heading: "Plugin stderr (last lines)", Lines: lines}
}

// tail joins the last three non-empty lines for a one-line message.
func tail(lines []string) string {
	const n = 3
	var kept []string
	for i := len(lines) - 1; i >= 0 && len(kept) < n; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			kept = append(kept, s)
		}
	}
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return strings.Join(kept, " | ")
}

// loadReport wraps a LoadError for a person.
func loadReport(p *config.Plugin, e *LoadError, sum string) *diag.Report {
	r := &diag.Report{Title: "Plugin Launch Failed", Source: p.Source, Cause: e}
	r.Command = []string{e.Path}
	name := strconv.Quote(e.Plugin)
	switch e.Kind {
	case LoadNotFound:
		r.Problem = "Plugin " + name + ": no file at " + e.Path
		r.Causes = []string{"The path is wrong, or the plugin was not built or installed yet"}
		r.Fix = []string{"Build the plugin (make plugins builds the first-party ones) or fix path in the plugin block"}
	case LoadNotExecutable:
		r.Problem = "Plugin " + name + ": " + e.Path + " is not an executable file"
		r.Causes = []string{"The file lacks execute permission, or the path names a directory"}
		r.Fix = []string{"chmod +x " + e.Path}
	case LoadChecksumMissing:
		r.Problem = "Plugin " + name + " has no sha256 in its plugin block; Nexus runs only plugins whose checksum is pinned"
		r.Causes = []string{"The plugin block was written without a checksum"}
		r.Fix = []string{"If you trust this binary, pin it: sha256 = \"" + sum + "\"",
			"For local development only, the host can be told to skip the check (insecure_skip_checksum)"}
	case LoadChecksumMismatch:
		r.Problem = "Plugin " + name + ": the binary's sha256 does not match the one pinned in config; it was not run"
		r.Details = []diag.Section{{Heading: "Checksums", Lines: []string{"pinned: " + p.SHA256, "actual: " + sum}}}
		r.Causes = []string{"The plugin was rebuilt or upgraded since the checksum was pinned", "The binary was replaced by someone else"}
		r.Fix = []string{"If you built or installed the new binary yourself, update the pin: sha256 = \"" + sum + "\""}
	case LoadNotAPlugin:
		r.Problem = "Plugin " + name + ": " + e.Path + " is not a Nexus plugin (it did not answer the plugin handshake)"
		if e.Err != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Handshake", Lines: []string{e.Err.Error()}})
		}
		r.Causes = []string{"The path names another program, or a plugin built for another host",
			"The plugin prints to stdout before calling plugin.Serve (stdout carries the handshake)"}
		r.Fix = []string{"Point path at a binary built with github.com/nexus-mcp/nexus/sdk/plugin",
			"A plugin in another language prints the handshake line first and nothing else on stdout (sdk/plugin/proto/README.md)"}
	case LoadVersion:
		r.Problem = "Plugin " + name + " speaks no protocol version this host supports"
		if e.Err != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Handshake", Lines: []string{e.Err.Error()}})
		}
		r.Causes = []string{"The plugin was built with an SDK newer or older than this host"}
		r.Fix = []string{"Rebuild the plugin against the SDK of this Nexus release, or upgrade Nexus"}
	case LoadTimeout:
		r.Problem = "Plugin " + name + " did not finish its handshake in time"
		r.Causes = []string{"The plugin hangs or does slow work before calling plugin.Serve"}
		r.Fix = []string{"Move slow setup out of main, into Open or NewPolicy"}
	case LoadExited:
		r.Problem = "Plugin " + name + " exited during start"
		r.Causes = []string{"The plugin failed before serving; its stderr usually says why",
			"The binary is not a Nexus plugin: it ran and exited without answering the plugin handshake"}
		r.Fix = []string{"Run the binary by hand to see its output"}
	case LoadBadPlugin:
		r.Problem = "Plugin " + name + " answered the go-plugin handshake but not the Nexus plugin protocol"
		if e.Err != nil {
			r.Problem += ": " + e.Err.Error()
		}
		r.Causes = []string{"The plugin was built with a modified or incompatible SDK",
			"A plugin in another language does not follow the contract, sdk/plugin/proto/plugin.proto"}
		r.Fix = []string{"Rebuild the plugin against github.com/nexus-mcp/nexus/sdk/plugin of this release",
			"Check a plugin in another language against sdk/plugin/proto/README.md"}
	case LoadReattach:
		r.Problem = "Plugin " + name + " is listed in NEXUS_REATTACH_PLUGINS but cannot be reached"
		r.Causes = []string{"The debug plugin process stopped, or the value is stale"}
		if e.Err != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Error", Lines: []string{e.Err.Error()}})
		}
		r.Fix = []string{"Restart the plugin with -debug and export the value it prints, or unset NEXUS_REATTACH_PLUGINS"}
	default:
		r.Problem = "Plugin " + name + " could not be started"
		if e.Err != nil {
			r.Problem += ": " + e.Err.Error()
		}
	}
	if len(e.Stderr) > 0 || e.Kind == LoadExited || e.Kind == LoadNotAPlugin || e.Kind == LoadTimeout {
		r.Details = append(r.Details, stderrSection(e.Stderr))
	}
	return r
}

// AsCrash finds a *CrashError in err's chain.
func AsCrash(err error) (*CrashError, bool) {
	var c *CrashError
	ok := errors.As(err, &c)
	return c, ok
}
