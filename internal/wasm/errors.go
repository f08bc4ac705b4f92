package wasm

import (
	"errors"
	"fmt"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// Errors of Load and Inspect; a load error is a *diag.Report whose Cause
// is a *LoadError wrapping one of these.
var (
	ErrNotFound       = errors.New("module file not found")
	ErrNotWASM        = errors.New("not a WebAssembly module")
	ErrModuleTooLarge = errors.New("module file too large")
	ErrSHA256         = errors.New("sha256 mismatch")
	ErrCompile        = errors.New("module does not compile")
	ErrABI            = errors.New("not a Nexus filter of ABI v1")
	ErrExports        = errors.New("exports or imports do not match ABI v1")
	ErrStart          = errors.New("instance failed to start")
	ErrConfigure      = errors.New("filter refused its config")
)

// Errors of a call; a call error is a *CallError wrapping one of these.
var (
	ErrTimeout        = errors.New("timed out")
	ErrMemoryLimit    = errors.New("memory limit reached")
	ErrTrap           = errors.New("trapped")
	ErrExit           = errors.New("exited")
	ErrBadDecision    = errors.New("invalid decision")
	ErrOutputBounds   = errors.New("decision outside the filter's memory")
	ErrOutputTooLarge = errors.New("decision too large")
	ErrInput          = errors.New("cannot pass the event")
	ErrFailed         = errors.New("filter failed")
)

// LoadError is why a module could not be loaded as a filter.
type LoadError struct {
	Filter string
	Path   string
	Err    error // wraps one of the Err* load errors
	// Problems lists each missing or wrong export or import.
	Problems []string
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("wasm filter %q (%s): %v", e.Filter, e.Path, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// CallError is a failed call of a filter: which filter, on which event,
// and why. The policy chain turns it into a denial (policies) or a
// withheld result (sanitizers), unless the filter's on_error says
// otherwise.
type CallError struct {
	Filter string
	Phase  string
	Method string
	Server string
	Tool   string
	Err    error // wraps one of the Err* call errors, or the context's error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("wasm filter %q on %s: %v", e.Filter, describe(e.Phase, e.Method, e.Server, e.Tool), e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// describe names an event the way people look for it: "tools/call
// github.delete_repo (request)".
func describe(phase, method, server, tool string) string {
	s := method
	switch {
	case tool != "" && server != "":
		s += " " + server + "." + tool
	case tool != "":
		s += " " + tool
	case server != "":
		s += " on " + server
	}
	if phase != "" {
		s += " (" + phase + ")"
	}
	return s
}

func callError(name string, e *event.Event, err error) *CallError {
	ce := &CallError{Filter: name, Phase: e.Phase, Method: e.Method, Server: e.Server.Name, Err: err}
	if e.Tool != nil {
		ce.Tool = e.Tool.Name
	}
	return ce
}
