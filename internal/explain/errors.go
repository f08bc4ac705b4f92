package explain

import (
	"errors"

	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/wasm"
)

// Error is err as a person reads it: the report on the first typed error
// in err's tree (in the order errors.As searches it) of a part that
// returns facts rather than reports (an OAuth failure, a plugin that
// could not start or crashed, a plugin config its schema refuses, a WASM
// module that could not be loaded as a filter), or err unchanged when a
// *diag.Report or a decision of the policy chain comes first, or there is
// none. The report's Cause is the typed error, so errors.As still finds
// it; what wrapped it adds nothing a report does not say (Render prints a
// wrapped report alone).
func Error(err error) error {
	if r := typed(err); r != nil {
		return r
	}
	return err
}

// typed is the report Error makes of err, or nil when it makes none.
func typed(err error) *diag.Report {
	var out *diag.Report
	walk(err, func(e error) bool {
		switch e := e.(type) {
		case *diag.Report:
			return true
		case *policy.DeniedError, *policy.WithheldError:
			// A decision of the chain, told by Refusal (a plugin that
			// crashed in fail-closed mode is a refusal), not by its cause.
			return true
		case *auth.Error:
			out = oauth(e)
		case *plugin.LoadError:
			out = pluginLoad(e)
		case *plugin.CrashError:
			out = pluginCrash(e)
		case *plugin.ConfigError:
			out = pluginConfig(e)
		case *plugin.UnknownError:
			out = pluginUnknown(e)
		case *plugin.CheckError:
			// Its cause tells it when it can (a checksum, a launch, a
			// report of its own).
			var rep *diag.Report
			if out = typed(e.Err); out == nil && !errors.As(e.Err, &rep) {
				out = pluginNotChecked(e)
			}
		case *wasm.LoadError:
			out = wasmLoad(e)
		default:
			return false
		}
		return true
	})
	return out
}

// walk calls f on err and what it wraps, depth first, until f returns
// true: the order errors.As searches in.
func walk(err error, f func(error) bool) bool {
	for err != nil {
		if f(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if walk(e, f) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}
