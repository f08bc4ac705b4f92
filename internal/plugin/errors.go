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

// LoadError is a plugin that could not be launched, with the facts
// internal/explain's report on it says what to do from: the plugin block's
// Source, and for a checksum the pinned one and the file's.
type LoadError struct {
	Plugin string
	Path   string
	Kind   LoadErrorKind
	Stderr []string // the last lines the plugin wrote to stderr, if it ran
	Err    error

	Source diag.Source // the plugin block
	Pinned string      // its sha256, as configured
	Sum    string      // the file's sha256, when known: what to pin if the binary is trusted
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

// ConfigError is a config block that fails the plugin's JSON Schema;
// internal/explain's report on it names the config file and line.
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

// CheckError is a plugin Check could not start to check its configs:
// the plugin, where its block is, and why (often a *LoadError, which
// then tells it).
type CheckError struct {
	Plugin string
	Source diag.Source
	Err    error
}

func (e *CheckError) Error() string {
	return "Plugin " + strconv.Quote(e.Plugin) + " could not be started to check its configs: " + e.Err.Error()
}

func (e *CheckError) Unwrap() error { return e.Err }

// UnknownError is a server or filter that names a plugin no plugin block
// defines.
type UnknownError struct {
	Plugin string
	Server string // the server that names it, or
	Filter string // the filter that does
	Source diag.Source
}

// Error is the sentence the report's problem is.
func (e *UnknownError) Error() string {
	who := "Server " + strconv.Quote(e.Server)
	if e.Filter != "" {
		who = "Filter " + strconv.Quote(e.Filter)
	}
	return who + " names plugin " + strconv.Quote(e.Plugin) + ", but no plugin block has that name"
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

// launchFailed is e with the facts of its plugin block pc, and sum, the
// file's sha256 when known.
func launchFailed(pc *config.Plugin, e *LoadError, sum string) *LoadError {
	e.Source, e.Pinned, e.Sum = pc.Source, pc.SHA256, sum
	return e
}

// AsCrash finds a *CrashError in err's chain.
func AsCrash(err error) (*CrashError, bool) {
	var c *CrashError
	ok := errors.As(err, &c)
	return c, ok
}
