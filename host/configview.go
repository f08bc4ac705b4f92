package host

import (
	"path/filepath"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// What a Config tells a program before it runs it, and the `nexus config`
// verbs (show, validate, compile, init --from) as functions. Each method
// converts the internal model as it is called; the strings and slices it
// returns may share the config's memory: read them, do not write into
// them (a Server is a copy).

// ConfigFile is one file a Config was read from.
type ConfigFile struct {
	Path  string // "" for the built-in default
	Layer string // "global", "project", "local", ...
}

// Warning is a problem that did not stop loading, such as an unknown
// field; String renders it as the nexus command prints it.
type Warning struct {
	Source  Source
	Subject string // what it is about: `server "github"`, `filter "pii"`, or ""
	Message string
}

func (w Warning) String() string {
	return config.Warning{Source: diag.Source(w.Source), Subject: w.Subject, Message: w.Message}.String()
}

// UntrustedFile is a workspace config LoadConfig found and left out for
// want of `nexus trust` (Config.Untrusted).
type UntrustedFile struct {
	Path   string   // as discovered
	Layer  string   // "ancestor" or "local"
	SHA256 string   // of the bytes that were looked at
	Edited bool     // trusted before with other content
	Runs   []string // what it would run and read, one a line
}

// in is the config c holds; an empty one for the zero Config, which
// holds nothing.
func (c *Config) in() *config.Config {
	if c == nil || c.c == nil {
		return &config.Config{}
	}
	return c.c
}

// Server returns the server called name, or nil.
func (c *Config) Server(name string) *Server { return server(c.in().Server(name)) }

// Servers lists the configured servers, sorted by name.
func (c *Config) Servers() []*Server { return conv(c.in().Servers, server) }

// Names lists the configured server names, sorted.
func (c *Config) Names() []string { return c.in().Names() }

// Files lists the files the config was read from, lowest layer first.
func (c *Config) Files() []ConfigFile {
	return conv(c.in().Files, func(f config.File) ConfigFile { return ConfigFile(f) })
}

// Warnings lists the problems that did not stop loading.
func (c *Config) Warnings() []Warning { return warnings(c.in().Warnings) }

// Roots are the absolute paths offered to servers as MCP roots.
func (c *Config) Roots() []string { return c.in().Roots }

// Untrusted lists the workspace configs found but not applied, for want
// of `nexus trust`; UntrustedReport explains them.
func (c *Config) Untrusted() []UntrustedFile {
	return conv(c.in().Untrusted, func(u config.Untrusted) UntrustedFile { return UntrustedFile(u) })
}

// ConfigSummary counts what a config holds, as `nexus config validate`
// reports it.
type ConfigSummary struct {
	Files, Servers, Plugins, Filters, Agents int
	Rules                                    int  // the filters' rule blocks and the agents' rules
	Gateway                                  bool // it has a gateway block
}

// Summary counts what c holds.
func (c *Config) Summary() ConfigSummary {
	s := ConfigSummary{Files: len(c.in().Files), Servers: len(c.in().Servers), Plugins: len(c.in().Plugins),
		Agents: len(c.in().Agents), Gateway: c.in().Gateway != nil}
	for _, f := range c.in().Filters {
		if f.Rule != nil {
			s.Rules++
		} else {
			s.Filters++
		}
	}
	for _, a := range c.in().Agents {
		s.Rules += len(a.Rules)
	}
	return s
}

// ConfigView describes a Config entry by entry, each with its origin,
// what it overrides and its settings, for showing it to a person.
type ConfigView struct {
	Files   []ConfigFile
	Servers []ConfigEntry
	Plugins []ConfigEntry
	Filters []ConfigEntry // in run order
	Agents  []ConfigEntry
	// Blocks are the blocks a config has at most one of, those it has:
	// gateway, sampling, lock, audit, telemetry, in that order.
	Blocks   []ConfigEntry
	Roots    []string
	Warnings []Warning
}

// ConfigEntry is one server, plugin, filter, rule, agent or block of a
// ConfigView.
type ConfigEntry struct {
	Kind      string // "server", "plugin", "filter", "rule", "agent", "gateway", ...
	Name      string
	Source    Source
	Overrides []Source // the lower layers' entries it replaces
	Settings  map[string]any
}

// View describes c (`nexus config show`), credentials written in its
// files masked unless showSecrets.
func (c *Config) View(showSecrets bool) *ConfigView {
	v := config.NewView(c.in(), showSecrets)
	entries := func(es []config.Entry) []ConfigEntry {
		return conv(es, func(e config.Entry) ConfigEntry {
			return ConfigEntry{Kind: e.Kind, Name: e.Name, Source: Source(e.Source), Overrides: conv(e.Overrides, source), Settings: e.Settings}
		})
	}
	return &ConfigView{
		Files:   conv(v.Files, func(f config.File) ConfigFile { return ConfigFile(f) }),
		Servers: entries(v.Servers), Plugins: entries(v.Plugins), Filters: entries(v.Filters),
		Agents: entries(v.Agents), Blocks: entries(v.Blocks), Roots: v.Roots, Warnings: warnings(v.Warnings),
	}
}

// The formats Compile writes.
const (
	FormatMCPServers = config.FormatMCPServers // {"mcpServers": ...} for Claude Desktop and Claude Code
	FormatVSCode     = config.FormatVSCode     // {"servers", "inputs"} for VS Code's .vscode/mcp.json
	FormatNexusJSON  = config.FormatNexusJSON  // every Nexus setting, as JSON that loads back to the same config
)

// CompileFormats lists the formats Compile writes.
func CompileFormats() []string { return append([]string(nil), config.Formats...) }

// Compile writes c in format (`nexus config compile`): secrets as ${NAME}
// references unless showSecrets; the warnings say what the format cannot
// express. An unknown format is an error.
func (c *Config) Compile(format string, showSecrets bool) ([]byte, []Warning, error) {
	compile := config.Compile
	if showSecrets {
		compile = config.CompileShowingSecrets
	}
	out, ws, err := compile(c.in(), format)
	return out, warnings(ws), hostErr(err)
}

// ViaGateway writes, in format, a client config whose only server is the
// Nexus gateway serving c: `nexus serve --agent agent` over stdio with
// configFiles as its --config, or, when url is set, the gateway's HTTP
// endpoint (`nexus config compile --via-gateway`).
func (c *Config) ViaGateway(format, agent, url string, configFiles []string) ([]byte, []Warning, error) {
	out, ws, err := config.ViaGateway(c.in(), format, agent, url, configFiles)
	return out, warnings(ws), hostErr(err)
}

// DefaultHCL is the starter nexus.hcl `nexus config init` writes: the
// built-in test server and commented examples of the other blocks.
func DefaultHCL() []byte { return config.DefaultHCL() }

// ConfigToHCL converts the client config at path (mcpServers JSON of any
// dialect, VS Code's mcp.json) to nexus.hcl (`nexus config init --from`):
// values from the environment stay env("NAME") reads, VS Code inputs
// become sensitive variables. The warnings say what did not carry over.
func ConfigToHCL(path string) ([]byte, []string, error) {
	// Unset variables are fine: they stay references.
	cfg, err := config.Load(config.Options{Files: []string{path}, AllowUnset: true, NoDefault: true})
	if err != nil {
		return nil, nil, hostErr(err)
	}
	out, ws := config.ToHCL(cfg, filepath.Base(path))
	return out, ws, nil
}

// ConfigErrors joins reports into one error, as LoadConfig's errors do:
// Reports lists them again.
func ConfigErrors(reps []*Report) error {
	if len(reps) == 0 {
		return nil
	}
	return hostErr(config.Errors(conv(reps, (*Report).diag)))
}

func warnings(ws []config.Warning) []Warning {
	return conv(ws, func(w config.Warning) Warning {
		return Warning{Source: Source(w.Source), Subject: w.Subject, Message: w.Message}
	})
}

// conv converts each element; nil stays nil, as the views print it.
func conv[T, E any](in []E, to func(E) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = to(v)
	}
	return out
}
