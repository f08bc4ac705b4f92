package config

import "github.com/nexus-mcp/nexus/internal/diag"

// View is the merged config as `nexus config show` prints it: every
// entry's settings in the nexus-json form (so secrets appear as references,
// never as values) with the entry's origin and what it overrode.
type View struct {
	Files   []File
	Servers []Entry
	Plugins []Entry
	Filters []Entry // in run order
	Agents  []Entry
	// Blocks are the blocks a config has at most one of, those it has:
	// gateway, sampling, lock, audit, telemetry, in that order.
	Blocks   []Entry
	Roots    []string
	Warnings []Warning
}

// Entry is one server, plugin, filter, agent or the gateway.
type Entry struct {
	Kind      string // "server", "plugin", "filter", "rule", "agent", "gateway"
	Name      string
	Source    diag.Source
	Overrides []diag.Source
	Settings  map[string]any
}

// NewView describes cfg, credentials written in its files masked unless
// showSecrets.
func NewView(cfg *Config, showSecrets bool) *View {
	c := newCompiler(cfg, FormatNexusJSON, showSecrets, false)
	v := &View{Files: cfg.Files, Roots: cfg.Roots, Warnings: cfg.Warnings}
	for _, s := range cfg.Servers {
		v.Servers = append(v.Servers, Entry{"server", s.Name, s.Source, s.Overrides, c.server(s)})
	}
	// The extras are built once and split up, so they read exactly as
	// nexus-json writes them.
	doc := map[string]any{}
	c.nexusExtras(doc)
	if ps, ok := doc["plugins"].(map[string]any); ok {
		for _, p := range cfg.Plugins {
			v.Plugins = append(v.Plugins, Entry{"plugin", p.Name, p.Source, p.Overrides, ps[p.Name].(map[string]any)})
		}
	}
	if fs, ok := doc["filters"].([]any); ok {
		for i, f := range cfg.Filters {
			e := fs[i].(map[string]any)
			delete(e, "name")
			kind := "filter"
			if f.Rule != nil {
				kind = "rule"
			}
			v.Filters = append(v.Filters, Entry{kind, f.Name, f.Source, f.Overrides, e})
		}
	}
	if as, ok := doc["agents"].(map[string]any); ok {
		for _, a := range cfg.Agents {
			v.Agents = append(v.Agents, Entry{"agent", a.Name, a.Source, a.Overrides, as[a.Name].(map[string]any)})
		}
	}
	for _, b := range []struct {
		kind      string
		present   bool
		src       func() diag.Source
		overrides func() []diag.Source
	}{
		{"gateway", cfg.Gateway != nil, func() diag.Source { return cfg.Gateway.Source }, func() []diag.Source { return cfg.Gateway.Overrides }},
		{"sampling", cfg.Sampling != nil, func() diag.Source { return cfg.Sampling.Source }, func() []diag.Source { return cfg.Sampling.Overrides }},
		{"lock", cfg.Lock != nil, func() diag.Source { return cfg.Lock.Source }, nil},
		{"audit", cfg.Audit != nil, func() diag.Source { return cfg.Audit.Source }, nil},
		{"telemetry", cfg.Telemetry != nil, func() diag.Source { return cfg.Telemetry.Source }, nil},
	} {
		settings, ok := doc[b.kind].(map[string]any)
		if !b.present || !ok {
			continue
		}
		e := Entry{Kind: b.kind, Source: b.src(), Settings: settings}
		if b.overrides != nil {
			e.Overrides = b.overrides()
		}
		v.Blocks = append(v.Blocks, e)
	}
	c.maskWarning()
	v.Warnings = append(v.Warnings, c.warns...)
	return v
}
