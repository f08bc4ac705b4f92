package wasm

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// SpecOf is the Spec of a WASM filter block of the config.
func SpecOf(f *config.Filter) (Spec, error) {
	if f.WASM == "" {
		return Spec{}, fmt.Errorf("filter %q is not a WASM filter (it names plugin %q)", f.Name, f.Plugin)
	}
	var cfg json.RawMessage
	if f.Config != nil {
		b, err := json.Marshal(f.Config)
		if err != nil {
			return Spec{}, fmt.Errorf("filter %q: config: %w", f.Name, err)
		}
		cfg = b
	}
	return Spec{
		Name:     f.Name,
		Path:     f.WASM,
		SHA256:   f.SHA256,
		Config:   cfg,
		MemoryMB: f.Limits.MemoryMB,
		Timeout:  f.Limits.Timeout,
		Pool:     f.Limits.Pool,
		Source:   f.Source,

		ABI:        f.ABI,
		Entrypoint: f.Entrypoint,
		DataFile:   f.DataFile,
	}, nil
}

// Entry loads a WASM filter block of the config and makes its link of the
// policy chain: the kind, the match blocks and on_error come from the
// config. on_error "allow" lets a policy's request through, and a
// sanitizer's result pass, when the filter fails; anything else fails
// closed (a policy denies, a sanitizer withholds the result).
func Entry(ctx context.Context, rt *Runtime, f *config.Filter) (policy.Entry, error) {
	spec, err := SpecOf(f)
	if err != nil {
		return policy.Entry{}, err
	}
	flt, err := rt.Load(ctx, spec)
	if err != nil {
		return policy.Entry{}, err
	}
	return EntryFor(flt, f), nil
}

// EntryFor makes the chain entry of an already loaded filter.
func EntryFor(flt *Filter, f *config.Filter) policy.Entry { return policy.EntryFor(flt, f) }
