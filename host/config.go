package host

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// Config is a loaded configuration, the standard mcpServers model with
// Nexus's additions (agents, filters, plugins, the gateway block): what
// New takes. LoadConfig and ParseConfig make one. Its methods read what
// a program shows or checks before running it; the model itself stays
// Nexus's, so a new block never changes this API.
type Config struct{ c *config.Config }

// wrapConfig is the one place an internal config becomes a Config.
func wrapConfig(c *config.Config, err error) (*Config, error) {
	if c == nil {
		return nil, hostErr(err)
	}
	return &Config{c: c}, hostErr(err)
}

// ConfigOptions say where LoadConfig finds configuration. The zero value
// discovers the layers of the working directory, as the nexus command
// does.
type ConfigOptions struct {
	// Files replace discovery (--config, repeatable); when empty,
	// NEXUS_CONFIG (a path list) does. Later files win.
	Files []string
	// Dir is the working directory: where local and ancestor layers are
	// found and what ${workspaceFolder} means. "" = os.Getwd().
	Dir string
	// Home holds the global layer (~/.nexus/) and is ${userHome}.
	// "" = os.UserHomeDir().
	Home string
	// LookupEnv reads the environment (${VAR}, env(), NEXUS_CONFIG,
	// NEXUS_INPUT_*, NEXUS_VAR_*, NEXUS_TRUST); nil = os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Prompter asks for VS Code inputs that the environment does not
	// supply; nil = never ask.
	Prompter Prompter
	// AllowUnset turns undefined variables and unanswered inputs into
	// warnings, keeping them as references: for showing a config, which
	// never needs the values.
	AllowUnset bool
	// NoDefault leaves out the built-in default when discovery finds
	// nothing.
	NoDefault bool
}

// Prompter asks a person for a VS Code input (ConfigOptions.Prompter).
type Prompter interface {
	Prompt(in ConfigInput) (string, error)
}

// ConfigInput is a VS Code input a config declares: a value asked of a
// person (a token, say) unless the environment supplies it.
type ConfigInput struct {
	ID          string
	Type        string // "promptString" (the only kind Nexus can ask for)
	Description string
	Password    bool
	Default     string
}

// EnvName is the environment variable that supplies the input when no
// person can be asked: NEXUS_INPUT_<ID>.
func (in ConfigInput) EnvName() string { return config.Input(in).EnvName() }

type prompter struct{ p Prompter }

func (p prompter) Prompt(in config.Input) (string, error) { return p.p.Prompt(ConfigInput(in)) }

func (o ConfigOptions) config() config.Options {
	c := config.Options{Files: o.Files, Dir: o.Dir, Home: o.Home, LookupEnv: o.LookupEnv, AllowUnset: o.AllowUnset, NoDefault: o.NoDefault}
	if o.Prompter != nil {
		c.Prompter = prompter{o.Prompter}
	}
	return c
}

// The transports a Server's Type names.
const (
	TypeStdio  = config.TypeStdio
	TypeHTTP   = config.TypeHTTP // streamable HTTP
	TypeSSE    = config.TypeSSE  // the legacy HTTP+SSE transport (protocol 2024-11-05)
	TypePlugin = config.TypePlugin
)

// Server is one server of a Config, as a Dialer or a Transport receives
// it and Status reports it: what a program shows or starts on its own.
// The rest of a server's block (its HTTP headers, OAuth, TLS, ...) the
// built-in transports read from the config itself.
type Server struct {
	Name    string
	Type    string   // TypeStdio, TypeHTTP, TypeSSE or TypePlugin
	Command []string // a stdio server's argv
	// Env is what a stdio server's environment adds to the host's
	// filtered one: its env file's values, then its env block's.
	Env     map[string]string
	Cwd     string // a stdio server's working directory; "" = the host's
	URL     string // an HTTP or SSE server's endpoint
	Plugin  string // the transport plugin a TypePlugin server runs on
	Enabled bool
	Timeout time.Duration // per request; 0 = the host default
	Source  Source        // where it is configured
}

// server is s as host shows it, made once per call that returns it (a
// dial, Servers, Config.Server); nil stays nil.
func server(s *config.Server) *Server {
	if s == nil {
		return nil
	}
	// Copies: what a Dialer does with them never reaches the config.
	out := &Server{Name: s.Name, Type: s.Type, Command: slices.Clone(s.Command), Env: maps.Clone(s.Stdio.Environ()), Cwd: s.Stdio.Cwd,
		URL: s.URL, Enabled: s.Enabled, Timeout: s.Timeout, Source: Source(s.Source)}
	if s.Plugin != nil {
		out.Plugin = s.Plugin.Name
	}
	return out
}

// LoadConfig discovers, reads and merges configuration as the nexus
// command does: nexus.hcl and every mcpServers JSON dialect (Claude
// Desktop, Claude Code, Cursor, VS Code) in the global, project and local
// layers, or the files o names. Its error holds every problem of every
// file, each a *Report. A project or parent-directory layer is applied only
// once `nexus trust` has trusted its exact content; the ones left out are
// in Config.Untrusted (UntrustedReport explains them), and o.Files
// names files to use as they are.
func LoadConfig(o ConfigOptions) (*Config, error) { return wrapConfig(config.Load(o.config())) }

// ParseConfig decodes one configuration held in memory: HCL when name ends
// in .hcl, otherwise any mcpServers JSON dialect. name is what errors call
// it (a file name, or "embedded").
func ParseConfig(data []byte, name string) (*Config, error) {
	src := diag.Source{File: name}
	if strings.HasSuffix(name, ".hcl") {
		return wrapConfig(config.ParseHCL(data, src))
	}
	return wrapConfig(config.Parse(data, src))
}

// UntrustedReport explains the workspace configs LoadConfig left out for
// want of trust (c.Untrusted): each file, what it would run and read, and
// the `nexus trust` that applies it; nil when there are none.
func UntrustedReport(c *Config) *Report {
	if len(c.in().Untrusted) == 0 {
		return nil
	}
	return report(config.UntrustedReport(c.in().Untrusted), nil)
}

// The conversions above keep host's types in step with config's.
var _ = ConfigInput(config.Input{})

// Reports lists the reports in err: each of the reports a config's errors
// hold (LoadConfig's), or the one Report in its chain; none when it has
// no Report.
func Reports(err error) []*Report { return reports(config.Reports(err)) }
