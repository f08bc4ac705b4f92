package host

import (
	"errors"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/internal/sampling"
	"github.com/nexus-mcp/nexus/internal/wasm"
)

// The errors a caller branches on are host's own. Each is made once, at
// the boundary (hostErr), around what the engine returned: its Error is
// that error's text and it Unwraps to it, so errors.As finds both host's
// type and the engine's (which internal/explain reads). One an embedder
// makes itself (a test's, say) Unwraps to the engine's type built from
// its fields, so Describe explains it the same way.

// UnknownServerError names a server that is not configured.
type UnknownServerError struct {
	Name  string
	Known []string // the servers that are
	from  error
}

func (e *UnknownServerError) Error() string { return e.Unwrap().Error() }
func (e *UnknownServerError) Unwrap() error {
	return or(e.from, &registry.UnknownServerError{Name: e.Name, Known: e.Known})
}

// UnknownToolError names a tool no server offers, with the nearest names.
type UnknownToolError struct {
	Name        string
	Server      string // "" when the name did not say
	Suggestions []string
	from        error
}

func (e *UnknownToolError) Error() string { return e.Unwrap().Error() }
func (e *UnknownToolError) Unwrap() error {
	return or(e.from, &registry.UnknownToolError{Name: e.Name, Server: e.Server, Suggestions: e.Suggestions})
}

// SchemaError says which of a call's arguments, or of a result's
// structured output, broke the tool's schema, and how.
type SchemaError struct {
	Server, Tool string
	What         string   // "arguments" or "structured output"
	Problems     []string // "/field: rule", one per failed rule
	from         error
}

func (e *SchemaError) Error() string { return e.Unwrap().Error() }
func (e *SchemaError) Unwrap() error {
	return or(e.from, &registry.SchemaError{Server: e.Server, Tool: e.Tool, What: e.What, Problems: e.Problems})
}

// ServerError is a server an operation could not reach; the operation
// still returns what the other servers gave.
type ServerError struct {
	Server string
	Err    error // why
	from   error
}

func (e *ServerError) Error() string { return e.Unwrap().Error() }
func (e *ServerError) Unwrap() error {
	return or(e.from, &registry.ServerError{Server: e.Server, Err: e.Err})
}

// DisabledError is a server that is configured but disabled.
type DisabledError struct {
	Server string
	from   error
}

func (e *DisabledError) Error() string { return e.Unwrap().Error() }
func (e *DisabledError) Unwrap() error {
	return or(e.from, &registry.DisabledError{Server: &config.Server{Name: e.Server}})
}

// DeniedError is a request the chain refused: Link says which link (the
// permission check, a rule, a filter or plugin) and Reason why, or Err
// how the link failed when it fails closed.
type DeniedError struct {
	Link   string
	Kind   Kind
	Reason string
	Method string
	Server string
	Tool   string
	Err    error
	Flags  []string // the link's findings behind a withheld tools/list tool
	from   error
}

func (e *DeniedError) Error() string { return e.Unwrap().Error() }
func (e *DeniedError) Unwrap() error {
	return or(e.from, &policy.DeniedError{Link: e.Link, Kind: policy.Kind(e.Kind), Reason: e.Reason, Method: e.Method,
		Server: e.Server, Tool: e.Tool, Err: e.Err, Flags: e.Flags})
}

// WithheldError is a result a sanitizer failed on, withheld because
// passing it unsanitized would defeat the sanitizer.
type WithheldError struct {
	Link string
	Err  error
	from error
}

func (e *WithheldError) Error() string { return e.Unwrap().Error() }
func (e *WithheldError) Unwrap() error {
	return or(e.from, &policy.WithheldError{Link: e.Link, Err: e.Err})
}

// NotHTTPServerError is an OAuth command for a server that is not an
// HTTP server.
type NotHTTPServerError struct {
	Server string
	Type   string // its transport
	from   error
}

func (e *NotHTTPServerError) Error() string { return e.Unwrap().Error() }
func (e *NotHTTPServerError) Unwrap() error {
	return or(e.from, &engine.NotHTTPServerError{Server: e.Server, Type: e.Type})
}

// AuditError is a decision the audit log failed to record, refused
// because the audit block says fail_closed.
type AuditError struct {
	Err  error
	from error
}

func (e *AuditError) Error() string { return e.Unwrap().Error() }
func (e *AuditError) Unwrap() error { return or(e.from, &engine.AuditError{Err: e.Err}) }

// FilterLoadError is a filter (WASM or plugin) that failed to load: in
// the chain, or a module OpenFilter or InspectFilter could not load.
type FilterLoadError struct {
	Filter string
	Err    error
	from   error
}

func (e *FilterLoadError) Error() string { return e.Unwrap().Error() }
func (e *FilterLoadError) Unwrap() error {
	return or(e.from, &engine.FilterLoadError{Filter: e.Filter, Err: e.Err})
}

// FilterCallError is a WASM filter's call that failed (WASMFilter.Call):
// a trap, a timeout, its memory limit, a decision that is not one. In the
// chain it is a DeniedError's or WithheldError's Err, unless the filter's
// on_error lets the event through.
type FilterCallError struct {
	Filter string
	Phase  string // "request" or "response"
	Method string
	Server string
	Tool   string
	Err    error // why
	from   error
}

func (e *FilterCallError) Error() string { return e.Unwrap().Error() }
func (e *FilterCallError) Unwrap() error {
	return or(e.from, &wasm.CallError{Filter: e.Filter, Phase: e.Phase, Method: e.Method, Server: e.Server, Tool: e.Tool, Err: e.Err})
}

// PluginLoadError is a plugin binary that could not be started
// (InspectPlugin, or a plugin block's binary at launch): Kind says why,
// Stderr is what it wrote, and for a checksum mismatch Sum is what to pin
// if the binary is trusted.
type PluginLoadError struct {
	Plugin string
	Path   string
	// Kind is "not found", "not executable", "checksum missing",
	// "checksum mismatch", "not a plugin", "protocol version", "start
	// timeout", "exited at start", "bad plugin", "reattach" or "other".
	Kind   string
	Stderr []string // its last lines, if it ran
	Source Source   // the plugin block
	Pinned string   // its sha256, as configured
	Sum    string   // the file's, when known
	Err    error
	from   error
}

func (e *PluginLoadError) Error() string { return e.Unwrap().Error() }
func (e *PluginLoadError) Unwrap() error {
	if e.from != nil {
		return e.from
	}
	kind := plugin.LoadOther
	for k := plugin.LoadOther; k <= plugin.LoadReattach; k++ {
		if k.String() == e.Kind {
			kind = k
		}
	}
	return &plugin.LoadError{Plugin: e.Plugin, Path: e.Path, Kind: kind, Stderr: e.Stderr, Err: e.Err,
		Source: diag.Source(e.Source), Pinned: e.Pinned, Sum: e.Sum}
}

// SamplingError is a sampling request the config's model did not answer
// (SamplingModel.Create): refused here (a limit, a server the block does
// not list) or failed at the endpoint.
type SamplingError struct {
	Server string
	Reason string
	from   error
}

func (e *SamplingError) Error() string { return e.Unwrap().Error() }
func (e *SamplingError) Unwrap() error {
	return or(e.from, &sampling.Error{Server: e.Server, Msg: e.Reason})
}

func or(from, made error) error {
	if from != nil {
		return from
	}
	return made
}

// namers turn an engine error into host's, each when its type is in the
// chain and host's is not yet.
var namers = []func(error) error{
	name(func(d *diag.Report, from error) error { return report(d, from) }, (*Report)(nil)),
	name(func(e *registry.UnknownServerError, from error) error {
		return &UnknownServerError{Name: e.Name, Known: e.Known, from: from}
	}, (*UnknownServerError)(nil)),
	name(func(e *registry.UnknownToolError, from error) error {
		return &UnknownToolError{Name: e.Name, Server: e.Server, Suggestions: e.Suggestions, from: from}
	}, (*UnknownToolError)(nil)),
	name(func(e *registry.SchemaError, from error) error {
		return &SchemaError{Server: e.Server, Tool: e.Tool, What: e.What, Problems: e.Problems, from: from}
	}, (*SchemaError)(nil)),
	name(func(e *registry.ServerError, from error) error {
		return &ServerError{Server: e.Server, Err: e.Err, from: from}
	}, (*ServerError)(nil)),
	name(func(e *registry.DisabledError, from error) error {
		return &DisabledError{Server: e.Server.Name, from: from}
	}, (*DisabledError)(nil)),
	name(func(e *policy.DeniedError, from error) error {
		return &DeniedError{Link: e.Link, Kind: Kind(e.Kind), Reason: e.Reason, Method: e.Method, Server: e.Server,
			Tool: e.Tool, Err: e.Err, Flags: e.Flags, from: from}
	}, (*DeniedError)(nil)),
	name(func(e *policy.WithheldError, from error) error {
		return &WithheldError{Link: e.Link, Err: e.Err, from: from}
	}, (*WithheldError)(nil)),
	name(func(e *engine.NotHTTPServerError, from error) error {
		return &NotHTTPServerError{Server: e.Server, Type: e.Type, from: from}
	}, (*NotHTTPServerError)(nil)),
	name(func(e *engine.AuditError, from error) error {
		return &AuditError{Err: e.Err, from: from}
	}, (*AuditError)(nil)),
	name(func(e *engine.FilterLoadError, from error) error {
		return &FilterLoadError{Filter: e.Filter, Err: e.Err, from: from}
	}, (*FilterLoadError)(nil)),
	name(func(e *wasm.LoadError, from error) error {
		return &FilterLoadError{Filter: e.Filter, Err: e.Err, from: from}
	}, (*FilterLoadError)(nil)),
	name(func(e *wasm.CallError, from error) error {
		return &FilterCallError{Filter: e.Filter, Phase: e.Phase, Method: e.Method, Server: e.Server, Tool: e.Tool, Err: e.Err, from: from}
	}, (*FilterCallError)(nil)),
	name(func(e *plugin.LoadError, from error) error {
		return &PluginLoadError{Plugin: e.Plugin, Path: e.Path, Kind: e.Kind.String(), Stderr: e.Stderr, Source: Source(e.Source),
			Pinned: e.Pinned, Sum: e.Sum, Err: e.Err, from: from}
	}, (*PluginLoadError)(nil)),
	name(func(e *sampling.Error, from error) error {
		return &SamplingError{Server: e.Server, Reason: e.Msg, from: from}
	}, (*SamplingError)(nil)),
	name(func(e *plugin.ConfigError, from error) error {
		return &PluginConfigError{Plugin: e.Plugin, Kind: e.Kind, User: e.User, Pointer: e.Pointer, Problems: e.Problems, from: from}
	}, (*PluginConfigError)(nil)),
	name(func(e *audit.Error, from error) error {
		return &AuditBreakError{File: e.File, Line: e.Line, Seq: e.Seq, Problem: e.Problem,
			Expected: e.Expected, Found: e.Found, Meaning: e.Meaning, from: from}
	}, (*AuditBreakError)(nil)),
}

func name[E, H error](to func(E, error) error, _ H) func(error) error {
	return func(err error) error {
		var h H
		if errors.As(err, &h) {
			return err
		}
		var e E
		if !errors.As(err, &e) {
			return err
		}
		return to(e, err)
	}
}

// hostErr is the boundary: what the engine returned, with host's type
// around each engine error a caller branches on. The errors of several
// servers (errors.Join) are named one by one, so each keeps its own.
func hostErr(err error) error {
	if err == nil {
		return nil
	}
	// A config's errors stay one value, so that Reports lists them all.
	if j, ok := err.(interface{ Unwrap() []error }); ok && !errors.As(err, new(config.Errors)) {
		errs := j.Unwrap()
		named := make([]error, len(errs))
		for i, e := range errs {
			named[i] = hostErr(e)
		}
		if joined := errors.Join(named...); joined.Error() == err.Error() {
			return joined
		}
	}
	for _, n := range namers {
		err = n(err)
	}
	return err
}
