package registry

import (
	"fmt"
	"strings"
)

// The errors of the host's catalog and calls that a caller tells apart
// (errors.As), and internal/explain turns into reports: they live here,
// below both the engine that returns them and explain, which reads them.

// UnknownServerError names a server that is not configured.
type UnknownServerError struct {
	Name  string
	Known []string
}

func (e *UnknownServerError) Error() string {
	return fmt.Sprintf("no server named %q is configured (configured: %v)", e.Name, e.Known)
}

// UnknownToolError names a tool no server offers, with the nearest names.
type UnknownToolError struct {
	Name        string
	Server      string
	Suggestions []string
}

func (e *UnknownToolError) Error() string {
	where := "any server"
	if e.Server != "" {
		where = "server " + fmt.Sprintf("%q", e.Server)
	}
	s := fmt.Sprintf("no tool %q on %s", e.Name, where)
	if len(e.Suggestions) > 0 {
		s += fmt.Sprintf("; did you mean %v?", e.Suggestions)
	}
	return s
}

// SchemaError is arguments or structured output that fail a tool's schema.
type SchemaError struct {
	Server, Tool string
	What         string   // "arguments" or "structured output"
	Problems     []string // "/field: rule", one per failed rule
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s.%s: %s do not match the tool's schema: %s", e.Server, e.Tool, e.What, strings.Join(e.Problems, "; "))
}

// ServerError is a server an operation could not reach; the operation
// still returns what the other servers gave.
type ServerError struct {
	Server string
	Err    error
}

func (e *ServerError) Error() string { return e.Err.Error() }
func (e *ServerError) Unwrap() error { return e.Err }
