package host

import (
	"strings"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

// Config is a loaded configuration, the standard mcpServers model with
// Nexus's additions (agents, filters, plugins, the gateway block): what
// New takes. LoadConfig and ParseConfig make one.
type Config = config.Config

// ConfigOptions say where LoadConfig finds configuration: Files replace
// discovery, Dir and Home are where the project and global layers are
// looked for, LookupEnv reads variables. The zero value discovers the
// layers of the working directory, as the nexus command does.
type ConfigOptions = config.Options

// Server is one server of a Config, as a Dialer or a Transport receives it.
type Server = config.Server

// StdioOptions and HTTPOptions are what a config sets for a server's
// transport (Server.Stdio, Server.HTTP), beside the command or url that
// chose it.
type (
	StdioOptions = stdio.Options
	HTTPOptions  = httptransport.Options
)

// Report is an error a person can act on: what went wrong, where (the
// server, the config file and line), the likely causes and the fix.
// Configuration and connection errors are Reports, or hold them; Error
// renders the whole text.
type Report = diag.Report

// LoadConfig discovers, reads and merges configuration as the nexus
// command does: nexus.hcl and every mcpServers JSON dialect (Claude
// Desktop, Claude Code, Cursor, VS Code) in the global, project and local
// layers, or the files o names. Its error holds every problem of every
// file, each a *Report. A project or parent-directory layer is applied only
// once `nexus trust` has trusted its exact content; the ones left out are
// in Config.Untrusted (UntrustedReport explains them), and o.Files
// names files to use as they are.
func LoadConfig(o ConfigOptions) (*Config, error) { return config.Load(o) }

// ParseConfig decodes one configuration held in memory: HCL when name ends
// in .hcl, otherwise any mcpServers JSON dialect. name is what errors call
// it (a file name, or "embedded").
func ParseConfig(data []byte, name string) (*Config, error) {
	src := diag.Source{File: name}
	if strings.HasSuffix(name, ".hcl") {
		return config.ParseHCL(data, src)
	}
	return config.Parse(data, src)
}

// UntrustedReport explains the workspace configs LoadConfig left out for
// want of trust (c.Untrusted): each file, what it would run and read, and
// the `nexus trust` that applies it; nil when there are none.
func UntrustedReport(c *Config) *Report {
	if c == nil || len(c.Untrusted) == 0 {
		return nil
	}
	return config.UntrustedReport(c.Untrusted)
}
