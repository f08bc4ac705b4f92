package stdio

import (
	"errors"
	"io"
	"io/fs"
	"strconv"
	"strings"
)

// StartErrorKind classifies why a server could not be started, so the
// diagnostics layer can suggest the right fix without parsing messages.
type StartErrorKind int

const (
	Other            StartErrorKind = iota // anything else (bad config, fork failure, ...)
	NotFound                               // the command is not on the PATH the server would see, or the file is missing
	PermissionDenied                       // the file exists but is not executable
	BadDir                                 // the working directory is missing or not a directory
)

func (k StartErrorKind) String() string {
	switch k {
	case NotFound:
		return "not found"
	case PermissionDenied:
		return "permission denied"
	case BadDir:
		return "bad working directory"
	default:
		return "other"
	}
}

// StartError reports a server process that could not be started.
type StartError struct {
	Server  string
	Command []string
	Path    string // PATH the child would have seen
	Kind    StartErrorKind
	Err     error
}

func (e *StartError) Unwrap() error { return e.Err }

func (e *StartError) Error() string {
	var name string
	if len(e.Command) > 0 {
		name = e.Command[0]
	}
	prefix := "server " + strconv.Quote(e.Server) + ": "
	switch e.Kind {
	case NotFound:
		return prefix + "command not found: " + strconv.Quote(name) + " (PATH seen by the server: " + e.Path + ")"
	case PermissionDenied:
		return prefix + "command is not executable: " + strconv.Quote(name) + " (" + errText(e.Err) + ")"
	case BadDir:
		var pe *fs.PathError
		if errors.As(e.Err, &pe) {
			return prefix + "working directory " + strconv.Quote(pe.Path) + " is not usable: " + errText(pe.Err)
		}
		return prefix + "working directory is not usable: " + errText(e.Err)
	default:
		return prefix + "cannot start " + strconv.Quote(name) + ": " + errText(e.Err)
	}
}

func errText(err error) string {
	if err == nil {
		return "unknown error"
	}
	return err.Error()
}

// ExitError reports that a server process is gone. Code is -1 when a signal
// ended it. Stderr and StdoutNoise hold the last lines the server printed,
// which usually say why it died.
type ExitError struct {
	Server      string
	Command     []string
	Code        int
	Signal      string
	Stderr      []string // tail
	StdoutNoise []string // last non-JSON stdout lines
	During      string   // optional: what the host was doing, e.g. "initialize"
}

// Unwrap lets a clean exit (code 0, no signal) match io.EOF, which mcp.Conn
// defines as the clean-close signal; any other exit unwraps to nil.
func (e *ExitError) Unwrap() error {
	if e.Code == 0 && e.Signal == "" {
		return io.EOF
	}
	return nil
}

func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString("server ")
	b.WriteString(strconv.Quote(e.Server))
	b.WriteString(": ")
	switch {
	case e.Signal != "":
		b.WriteString("killed by signal ")
		b.WriteString(e.Signal)
	case e.Code >= 0:
		b.WriteString("exited with code ")
		b.WriteString(strconv.Itoa(e.Code))
	default:
		b.WriteString("exited")
	}
	if e.During != "" {
		b.WriteString(" during ")
		b.WriteString(e.During)
	}
	switch {
	case len(e.Stderr) > 0:
		b.WriteString("; last stderr: ")
		b.WriteString(tail(e.Stderr))
	case len(e.StdoutNoise) > 0:
		b.WriteString("; last non-JSON stdout: ")
		b.WriteString(tail(e.StdoutNoise))
	default:
		b.WriteString("; it wrote nothing to stderr")
	}
	return b.String()
}

// tail keeps the one-line message readable; the full tail stays in the
// fields for the diagnostics layer.
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
