package wasm

import (
	"errors"
	"fmt"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Errors of Load and Inspect; a load error is a *LoadError wrapping one
// of these.
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

// LoadError is why a module could not be loaded as a filter, with the
// facts internal/explain's report on it says what to do from.
type LoadError struct {
	Filter string
	Path   string
	Err    error // wraps one of the Err* load errors
	// Problems lists each missing or wrong export or import (or what a
	// Rego policy lacks: builtins, entrypoints).
	Problems []string

	Kind   LoadKind
	Source diag.Source // the filter block
	// Detail is what the file is instead (LoadNotWASM), or the failure in
	// words: the compiler's, the filter's own when it refused its config.
	Detail string
	// Pinned and Sum are the sha256 pinned and the file's (LoadSHA256).
	Pinned, Sum string
	// Size and Limit are the file's size and the limit for a module
	// (LoadTooLarge), or the memory the module needs at start and its
	// limit (LoadMemory), in bytes.
	Size, Limit uint64
	// Names are the builtins a Rego policy may not call or this host
	// lacks (LoadOPAImpure, LoadOPAMissing).
	Names []string
	// Entrypoint is the Rego entrypoint the filter block names, as the
	// policy's build would (LoadOPANoEntrypoint).
	Entrypoint string
}

// LoadKind says why a module could not be loaded, so that a report (and
// a test) can tell the cases apart without reading messages.
type LoadKind int

const (
	LoadOther           LoadKind = iota
	LoadMissing                  // no file at Path
	LoadDirectory                // Path is a directory
	LoadNotFile                  // a device or another file that is not regular (Detail)
	LoadRead                     // the file could not be read (Detail)
	LoadTooLarge                 // the file is over MaxModuleSize
	LoadSHA256                   // the file's sha256 is not the pinned one; nothing was compiled
	LoadNotWASM                  // not a WebAssembly core module (Detail says what it is)
	LoadBundle                   // gzip, so read as an OPA bundle, and not one (Detail)
	LoadBundleNotWASM            // the module in the bundle is not WebAssembly (Detail)
	LoadNotOPA                   // abi = "opa" names a module opa build did not make (Detail)
	LoadTables                   // a table over MaxTableElems (Detail)
	LoadCompile                  // the module does not compile (Detail)
	LoadOPAABI                   // OPA's ABI is not as Nexus calls it (Problems)
	LoadABI                      // not the Nexus filter ABI v1 (Problems)
	LoadMemory                   // the module needs more memory at start than its limit
	LoadOPAData                  // the Rego policy's data document (Detail)
	LoadOPAImpure                // the policy calls builtins that reach outside the sandbox
	LoadOPAMissing               // the policy calls builtins this host lacks
	LoadOPAEntrypoints           // several entrypoints, and the filter block names none
	LoadOPANoEntrypoint          // the entrypoint named is not the policy's
	LoadConfigure                // the filter refused its config (Detail)
	LoadStart                    // the module failed to start (Detail)
)

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
