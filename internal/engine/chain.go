package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/plugin"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/rules"
	"github.com/nexus-mcp/nexus/internal/wasm"
)

// FilterLoadError is a configured filter that could not be loaded. Calls
// are refused while it stands: running without a configured policy would
// quietly drop the protection it gives.
type FilterLoadError struct {
	Filter string
	Err    error
}

func (e *FilterLoadError) Error() string {
	return fmt.Sprintf("filter %q could not be loaded, so calls are refused until it can: %v", e.Filter, e.Err)
}

func (e *FilterLoadError) Unwrap() error { return e.Err }

// loadChain builds the chain once: the agents' rules, the configured
// filters (and top-level rules) in config order, then Options.Links.
func (h *Host) loadChain(ctx context.Context) error {
	h.chainOnce.Do(func() {
		// Filters load concurrently (a plugin launch or a WASM compile is
		// tens of milliseconds, mostly CPU) and keep their config order.
		links := make([]policy.Link, len(h.cfg.Filters))
		loadErrs := make([]error, len(h.cfg.Filters))
		var wg sync.WaitGroup
		for i, f := range h.cfg.Filters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				links[i], loadErrs[i] = h.loadFilter(ctx, f)
			}()
		}
		wg.Wait()
		var entries []policy.Entry
		var errs []error
		for i, f := range h.cfg.Filters {
			if loadErrs[i] != nil {
				errs = append(errs, &FilterLoadError{Filter: f.Name, Err: loadErrs[i]})
				continue
			}
			entries = append(entries, policy.EntryFor(links[i], f))
		}
		agentEntries, ruleErrs := h.agentRules()
		entries = append(agentEntries, entries...)
		errs = append(errs, ruleErrs...)
		entries = append(entries, h.opts.Links...)
		h.chain = policy.NewChain(entries...)
		h.chainErr = errors.Join(errs...)
	})
	return h.chainErr
}

func (h *Host) loadFilter(ctx context.Context, f *config.Filter) (policy.Link, error) {
	switch {
	case f.Rule != nil:
		return compiledRule(f, "")
	case f.Plugin != "":
		return h.pluginManager().Filter(ctx, h.cfg, f)
	case f.WASM != "":
		rt, err := h.wasmRuntime(ctx)
		if err != nil {
			return nil, err
		}
		spec, err := wasm.SpecOf(f)
		if err != nil {
			return nil, err
		}
		return rt.Load(ctx, spec)
	}
	return nil, fmt.Errorf("filter %q names no wasm module, plugin or rule", f.Name)
}

// agentRules are the rules of the agents' blocks, first in the chain:
// each sees only its agent's events, and they cost a microsecond. A rule
// that does not compile (the config compiled every rule when it loaded; a
// Config built by hand may hold one that does not) is a FilterLoadError,
// as a filter that does not load is: calls are refused while it stands.
func (h *Host) agentRules() ([]policy.Entry, []error) {
	var out []policy.Entry
	var errs []error
	for _, a := range h.cfg.Agents {
		for _, f := range a.Rules {
			r, err := compiledRule(f, a.Name)
			if err != nil {
				errs = append(errs, &FilterLoadError{Filter: a.Name + "." + f.Name, Err: err})
				continue
			}
			out = append(out, policy.EntryFor(r, f))
		}
	}
	return out, errs
}

// compiledRule is the rule of a rule block, compiled when the config
// loaded (or now, for a Config made in code).
func compiledRule(f *config.Filter, agent string) (policy.Link, error) {
	if f.Rule.Compiled != nil {
		return f.Rule.Compiled, nil
	}
	return rules.Compile(rules.Spec{Name: f.Name, Agent: agent, Kind: f.Kind, When: f.Rule.When, Action: f.Rule.Action,
		Reason: f.Rule.Reason, Set: f.Rule.Set, Source: f.Source})
}

func (h *Host) pluginManager() *plugin.Manager {
	h.xmu.Lock()
	defer h.xmu.Unlock()
	if h.plugins == nil {
		h.plugins = plugin.NewManager(plugin.Options{Logger: h.log.Named("plugin")})
	}
	return h.plugins
}

func (h *Host) wasmRuntime(ctx context.Context) (*wasm.Runtime, error) {
	h.xmu.Lock()
	defer h.xmu.Unlock()
	if h.wasm == nil {
		rt, err := wasm.NewRuntime(ctx, wasm.Options{Logger: h.log.Named("wasm")})
		if err != nil {
			return nil, err
		}
		h.wasm = rt
	}
	return h.wasm, nil
}

// closeExtensions stops plugin processes and the WASM runtime.
func (h *Host) closeExtensions(ctx context.Context) {
	h.xmu.Lock()
	pm, rt := h.plugins, h.wasm
	h.plugins, h.wasm = nil, nil
	h.xmu.Unlock()
	if pm != nil {
		pm.Close()
	}
	if rt != nil {
		rt.Close(ctx)
	}
}

// CleanupPlugins kills every plugin process this process started: the last
// line of defence on the way out (main defers it); Close is the orderly way.
func CleanupPlugins() { plugin.CleanupAll() }
