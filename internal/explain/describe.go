package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/internal/suggest"
)

// Options say what an error Describe explains was about, and how the
// program that shows it lets a person act.
type Options struct {
	// Agent made the request; Server is what it was about, when the error
	// does not say (a *registry.ServerError does).
	Agent, Server string
	// Timeout is the request timeout the caller used, for a request that
	// ran out of it.
	Timeout time.Duration
	Hints   Hints
}

// Hints name the commands and flags a program offers, for the fixes of
// a Report: the nexus command line names its own; the zero value names
// none and points at the config and the API instead.
type Hints struct {
	// ListTools is the command that lists server's tools ("" for every
	// server), with their schemas when schemas is set.
	ListTools func(server string, schemas bool) string
	// ListServers is the command that lists the configured servers.
	ListServers string
	// TimeoutFlag is the flag that gives a request longer.
	TimeoutFlag string
	// Arguments says how the program takes a tool's arguments, for a call
	// whose arguments break the tool's schema.
	Arguments string
}

// Describe explains an error a host call returned to a person, as a
// *diag.Report with the context the call itself could not give: the
// server it is about and the config file and layer that server (and the
// agent, and the filter that refused) came from, what else was
// configured, the nearest names. The typed errors Error knows become its
// reports, with or without a config. Reports pass through unchanged, and so
// do errors about no server (a usage error). A program prints what it
// returns, with the renderer that fits its reader (diag.Report's Error,
// Brief or JSON).
func Describe(cfg *config.Config, err error, o Options) error {
	if err = Error(err); err == nil || cfg == nil {
		return err
	}
	var rep *diag.Report
	if errors.As(err, &rep) || len(config.Reports(err)) > 0 {
		return err
	}
	var (
		denied *policy.DeniedError
		ut     *registry.UnknownToolError
		us     *registry.UnknownServerError
		schema *registry.SchemaError
		se     *registry.ServerError
		rpc    *mcp.RPCError
		te     *mcp.TimeoutError
		ns     *mcp.NotSupportedError
	)
	server := o.Server
	if errors.As(err, &se) {
		server = se.Server
	}
	switch {
	case errors.As(err, &denied):
		if denied.Server != "" {
			server = denied.Server
		}
		return Refusal(cfg, o.Agent, server, denied)
	case errors.As(err, &ut):
		if ut.Server != "" {
			server = ut.Server
		}
		r := report(cfg, "Unknown MCP Tool", server)
		r.Cause = err
		where := "any configured server"
		if ut.Server != "" {
			where = "server " + fmt.Sprintf("%q", ut.Server)
		}
		r.Problem = fmt.Sprintf("There is no tool %q on %s", ut.Name, where)
		if len(ut.Suggestions) > 0 {
			r.Details = []diag.Section{{Heading: "Did you mean", Lines: ut.Suggestions}}
		}
		r.FixHeading = "Fix"
		if o.Hints.ListTools != nil {
			r.Fix = []string{"List the tools: " + o.Hints.ListTools(ut.Server, false)}
		} else {
			r.Fix = []string{"Check the name against the tools the agent may use"}
		}
		return r
	case errors.As(err, &us):
		name, _, _ := strings.Cut(us.Name, " (in ")
		r := &diag.Report{Title: "Unknown MCP Server", Cause: err,
			Problem: fmt.Sprintf("No server named %q is configured", name)}
		var lines []string
		for _, s := range cfg.Servers {
			if !slices.Contains(us.Known, s.Name) {
				continue
			}
			l := s.Name
			if src := s.Source.String(); src != "" {
				l += " — " + src
			}
			lines = append(lines, l)
		}
		if len(lines) == 0 {
			lines = []string{"(none)"}
		}
		r.Details = append(r.Details, diag.Section{Heading: "Configured servers", Lines: lines})
		if near := suggest.Nearest(name, us.Known); near != "" {
			r.Details = append(r.Details, diag.Section{Heading: "Did you mean", Lines: []string{near}})
		}
		r.Details = append(r.Details, diag.Section{Heading: "Config files read", Lines: configFiles(cfg)})
		r.FixHeading = "Fix"
		r.Fix = []string{"Add the server to one of these files, or check the name"}
		if o.Hints.ListServers != "" {
			r.Fix[0] += ": " + o.Hints.ListServers
		}
		return r
	case errors.As(err, &schema):
		r := report(cfg, "Invalid Tool Arguments", schema.Server)
		if schema.What != "arguments" {
			r.Title = "Invalid Tool Output"
		}
		r.Cause = err
		r.Problem = fmt.Sprintf("The %s of %s.%s do not match the tool's schema", schema.What, schema.Server, schema.Tool)
		r.Details = []diag.Section{{Heading: "Problems", Lines: schema.Problems}}
		r.FixHeading = "Fix"
		if schema.What == "arguments" {
			r.Fix = []string{"See the tool's inputSchema"}
			if o.Hints.ListTools != nil {
				r.Fix[0] += ": " + o.Hints.ListTools(schema.Server, true)
			}
			if o.Hints.Arguments != "" {
				r.Fix = append(r.Fix, o.Hints.Arguments)
			}
		} else {
			r.Fix = []string{"The server's result breaks its own outputSchema: report it to the server's authors"}
		}
		return r
	case errors.As(err, &te):
		r := report(cfg, "MCP Request Timed Out", server)
		r.Cause = err
		r.Problem = fmt.Sprintf("The server did not answer %s within %s; Nexus cancelled the request", te.Method, te.After)
		r.FixHeading = "Fix"
		longer := "Allow longer: "
		if o.Hints.TimeoutFlag != "" {
			longer += o.Hints.TimeoutFlag + " 2m, or "
		}
		r.Fix = []string{longer + "\"timeout\" (seconds) in the server's entry" + inFile(serverSource(cfg, server))}
		return r
	case errors.As(err, &ns):
		r := report(cfg, "Not Supported by the Server", server)
		r.Cause = err
		r.Problem = ns.Error()
		return r
	case errors.As(err, &rpc):
		r := report(cfg, "MCP Server Error", server)
		r.Cause = err
		r.Problem = "The server answered with an error: " + rpc.Error()
		return r
	case errors.Is(err, context.DeadlineExceeded):
		r := report(cfg, "MCP Request Timed Out", server)
		r.Cause = err
		r.Problem = "No answer within " + o.Timeout.String()
		r.FixHeading = "Fix"
		if o.Hints.TimeoutFlag != "" {
			r.Fix = []string{"Allow longer with " + o.Hints.TimeoutFlag}
		} else {
			r.Fix = []string{"Allow longer: the request's deadline, or Options.Timeout"}
		}
		return r
	}
	if server != "" && cfg.Server(server) != nil {
		r := report(cfg, "MCP Request Failed", server)
		r.Cause = err
		r.Problem = err.Error()
		return r
	}
	return err
}

// report starts a report about server with its origin.
func report(cfg *config.Config, title, server string) *diag.Report {
	r := &diag.Report{Title: title, Server: server}
	if s := cfg.Server(server); s != nil {
		r.Source = s.Source
		r.Command = s.Command
		r.URL = s.URL
	}
	return r
}

func serverSource(cfg *config.Config, server string) diag.Source {
	if s := cfg.Server(server); s != nil {
		return s.Source
	}
	return diag.Source{}
}

func inFile(s diag.Source) string {
	if s.File == "" {
		return ""
	}
	return " in " + s.File
}

func configFiles(cfg *config.Config) []string {
	var out []string
	for _, f := range cfg.Files {
		out = append(out, diag.Source{File: f.Path, Layer: f.Layer}.String())
	}
	if len(out) == 0 {
		out = []string{"(none)"}
	}
	return out
}

// Refusal is the report on a request the policy chain refused: the link
// that refused it and why, the agent, where each is configured, and a fix
// that fits the link. The CLI prints it in full, the gateway's client
// reads it in brief (a refused call's tool result, a refused request's
// JSON-RPC error): one report, so both say the same.
func Refusal(cfg *config.Config, agent, server string, d *policy.DeniedError) *diag.Report {
	if d.Server != "" {
		server = d.Server
	}
	c := diag.Context{Server: server}
	den := diag.Denial{Method: d.Method, Tool: d.Tool, Link: d.Link, Kind: d.Kind.String(), Reason: d.Reason, Agent: agent}
	if d.Err != nil {
		den.Failure = d.Err.Error()
	}
	if d.Link == "lock" {
		den.LinkKind = diag.LinkLock
	}
	var filters []*config.Filter
	if cfg != nil {
		if s := cfg.Server(server); s != nil {
			c.Source = s.Source
		}
		filters = cfg.Filters
		if ag := cfg.Agent(agent); ag != nil {
			den.AgentSource = ag.Source
			filters = append(slices.Clone(ag.Rules), filters...) // an agent's rules come first in the chain
		}
	}
	for _, f := range filters {
		if f.Name != d.Link || den.LinkKind != "" {
			continue
		}
		den.LinkSource = f.Source
		switch {
		case f.Rule != nil:
			den.LinkKind = diag.LinkRule
		case f.Plugin != "":
			den.LinkKind = diag.LinkPlugin
		default:
			den.LinkKind = diag.LinkWASM
		}
	}
	r := diag.PolicyDenied(c, den)
	r.Cause = d
	return r
}
