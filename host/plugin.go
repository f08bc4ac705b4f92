package host

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/plugin"
)

// PluginInfo is what a go-plugin binary offers (InspectPlugin): its
// kinds, the protocol versions it speaks and its config schemas, with
// the checksum a plugin block pins it by.
type PluginInfo struct {
	Path             string
	SHA256           string
	Name             string // as the author set it; may be empty
	Version          string
	Kinds            []string // transport, policy, sanitizer
	ProtocolVersion  int      // the version host and plugin agreed on
	ProtocolVersions []int    // every version the plugin speaks
	EventABI         int
	Schemas          map[string]json.RawMessage // config schema by kind
}

// InspectOptions say how InspectPlugin runs a binary: how long it may
// take to start, and the sha256 it must have (checked before it runs, as
// a plugin block's is).
type InspectOptions struct {
	StartTimeout time.Duration
	SHA256       string
}

// InspectPlugin runs the plugin binary at path just long enough to ask
// what it offers. The binary runs: inspect only binaries you trust.
func InspectPlugin(ctx context.Context, path string, o InspectOptions) (PluginInfo, error) {
	info, err := plugin.Inspect(ctx, path, plugin.InspectOptions{StartTimeout: o.StartTimeout, SHA256: o.SHA256})
	if err != nil {
		return PluginInfo{}, hostErr(err)
	}
	return PluginInfo{Path: info.Path, SHA256: info.SHA256, Name: info.Name, Version: info.Version, Kinds: info.Kinds,
		ProtocolVersion: info.ProtocolVersion, ProtocolVersions: info.ProtocolVersions, EventABI: info.EventABI, Schemas: info.Schemas}, nil
}

// PluginCheck is what CheckPlugins found of one plugin.
type PluginCheck struct {
	Plugin  string
	Configs int // the configs (filters' and servers') that match its schemas
	// Problems are each config its schema refused, or why it could not
	// be started to check them, explained.
	Problems []PluginProblem
}

// PluginProblem is one problem CheckPlugins found: a config the plugin's
// schema refused (Refused), or the plugin could not be started (then
// none of its configs was checked).
type PluginProblem struct {
	Report  *Report
	Refused bool
}

// CheckPlugins starts every plugin that cfg's filters and servers use, as
// any launch does (checksum first), and checks each of their configs
// against the plugin's own schema, without configuring an instance or
// opening a session; plugins no filter or server uses are not started.
// It is what `nexus config validate` runs.
func CheckPlugins(ctx context.Context, cfg *Config) []PluginCheck {
	m := plugin.NewManager(plugin.Options{Logger: hclog.NewNullLogger()})
	defer m.Close()
	var out []PluginCheck
	ic := internalConfig(cfg)
	for _, c := range m.Check(ctx, ic) {
		pc := PluginCheck{Plugin: c.Plugin, Configs: c.Configs}
		for _, err := range c.Errs {
			var bad *plugin.ConfigError
			var notChecked *plugin.CheckError
			refused := errors.As(err, &bad)
			if !refused && !errors.As(err, &notChecked) {
				var src diag.Source
				if b := ic.Plugin(c.Plugin); b != nil {
					src = b.Source
				}
				err = &plugin.CheckError{Plugin: c.Plugin, Source: src, Err: err}
			}
			err = Describe(cfg, err, DescribeOptions{}) // the plugin's typed error as its report
			var rep *Report
			if !errors.As(err, &rep) {
				rep = &Report{Title: "Plugin Config Not Checked", Problem: err.Error(), Cause: err} // unreachable: explain tells every CheckError
			}
			pc.Problems = append(pc.Problems, PluginProblem{Report: rep, Refused: refused})
		}
		out = append(out, pc)
	}
	return out
}

// PluginConfigError is a plugin config (a server's or a filter's) that
// the plugin's own schema refuses.
type PluginConfigError struct {
	Plugin   string
	Kind     string   // transport, policy, sanitizer
	User     string   // the server or filter that holds the config
	Pointer  string   // JSON pointer of the config block in its server or filter ("/plugin/config")
	Problems []string // "/url: missing property", each at its JSON pointer
	from     error
}

func (e *PluginConfigError) Error() string { return e.Unwrap().Error() }
func (e *PluginConfigError) Unwrap() error {
	return or(e.from, &plugin.ConfigError{Plugin: e.Plugin, Kind: e.Kind, User: e.User, Pointer: e.Pointer, Problems: slices.Clone(e.Problems)})
}
