package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/suggest"
)

// explainErr gives an error that reaches the command line the context the
// host could not: the server it is about and the config file and layer
// that server came from. Reports from the host pass through unchanged;
// usage errors (no server involved) too.
func (a *app) explainErr(err error) error {
	if err == nil || a.cfg == nil {
		return err
	}
	var rep *diag.Report
	if errors.As(err, &rep) || len(config.Reports(err)) > 0 {
		return err
	}
	var (
		denied *policy.DeniedError
		ut     *host.UnknownToolError
		us     *host.UnknownServerError
		schema *host.SchemaError
		se     *host.ServerError
		rpc    *mcp.RPCError
		te     *mcp.TimeoutError
		ns     *mcp.NotSupportedError
	)
	server := a.target
	if errors.As(err, &se) {
		server = se.Server
	}
	switch {
	case errors.As(err, &denied):
		if denied.Server != "" {
			server = denied.Server
		}
		return a.deniedReport(server, denied)
	case errors.As(err, &ut):
		if ut.Server != "" {
			server = ut.Server
		}
		r := a.report("Unknown MCP Tool", server)
		r.Cause = err
		where := "any configured server"
		if ut.Server != "" {
			where = "server " + fmt.Sprintf("%q", ut.Server)
		}
		r.Problem = fmt.Sprintf("There is no tool %q on %s", ut.Name, where)
		if len(ut.Suggestions) > 0 {
			r.Details = []diag.Section{{Heading: "Did you mean", Lines: ut.Suggestions}}
		}
		list := "nexus tools"
		if ut.Server != "" {
			list += " --server " + ut.Server
		}
		r.FixHeading = "Fix"
		r.Fix = []string{"List the tools: " + list}
		return r
	case errors.As(err, &us):
		name, _, _ := strings.Cut(us.Name, " (in ")
		r := &diag.Report{Title: "Unknown MCP Server", Cause: err,
			Problem: fmt.Sprintf("No server named %q is configured", name)}
		var lines []string
		for _, s := range a.cfg.Servers {
			if !contains(us.Known, s.Name) {
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
		r.Details = append(r.Details, diag.Section{Heading: "Config files read", Lines: a.configFiles()})
		r.FixHeading = "Fix"
		r.Fix = []string{"Add the server to one of these files, or check the name: nexus servers"}
		return r
	case errors.As(err, &schema):
		r := a.report("Invalid Tool Arguments", schema.Server)
		if schema.What != "arguments" {
			r.Title = "Invalid Tool Output"
		}
		r.Cause = err
		r.Problem = fmt.Sprintf("The %s of %s.%s do not match the tool's schema", schema.What, schema.Server, schema.Tool)
		r.Details = []diag.Section{{Heading: "Problems", Lines: schema.Problems}}
		r.FixHeading = "Fix"
		if schema.What == "arguments" {
			r.Fix = []string{
				"See the tool's inputSchema: nexus tools --server " + schema.Server + " -o json",
				"key=value takes the type the schema gives the property (a string stays a string; n=3, b=true, o={\"x\":1} are JSON for a number, boolean or object); key:=value always sends JSON",
			}
		} else {
			r.Fix = []string{"The server's result breaks its own outputSchema: report it to the server's authors"}
		}
		return r
	case errors.As(err, &te):
		r := a.report("MCP Request Timed Out", server)
		r.Cause = err
		r.Problem = fmt.Sprintf("The server did not answer %s within %s; Nexus cancelled the request", te.Method, te.After)
		r.FixHeading = "Fix"
		r.Fix = []string{"Allow longer: --timeout 2m, or \"timeout\" (seconds) in the server's entry" + inFile(a.serverSource(server))}
		return r
	case errors.As(err, &ns):
		r := a.report("Not Supported by the Server", server)
		r.Cause = err
		r.Problem = ns.Error()
		return r
	case errors.As(err, &rpc):
		r := a.report("MCP Server Error", server)
		r.Cause = err
		r.Problem = "The server answered with an error: " + rpc.Error()
		return r
	case errors.Is(err, context.DeadlineExceeded):
		r := a.report("MCP Request Timed Out", server)
		r.Cause = err
		r.Problem = "No answer within " + a.timeout.String()
		r.FixHeading = "Fix"
		r.Fix = []string{"Allow longer with --timeout"}
		return r
	}
	if server != "" && a.cfg.Server(server) != nil {
		r := a.report("MCP Request Failed", server)
		r.Cause = err
		r.Problem = err.Error()
		return r
	}
	return err
}

// report starts a report about server with its origin.
func (a *app) report(title, server string) *diag.Report {
	r := &diag.Report{Title: title, Server: server}
	if s := a.cfg.Server(server); s != nil {
		r.Source = s.Source
		r.Command = s.Command
		r.URL = s.URL
	}
	return r
}

func (a *app) serverSource(server string) diag.Source {
	if s := a.cfg.Server(server); s != nil {
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

func (a *app) configFiles() []string {
	var out []string
	for _, f := range a.cfg.Files {
		out = append(out, diag.Source{File: f.Path, Layer: f.Layer}.String())
	}
	if len(out) == 0 {
		out = []string{"(none)"}
	}
	return out
}

// deniedReport renders a policy refusal with the link, the agent and
// where each is configured.
func (a *app) deniedReport(server string, d *policy.DeniedError) error {
	var c diag.Context
	if s := a.cfg.Server(server); s != nil {
		c = diag.Context{Server: s.Name, Source: s.Source}
	} else {
		c = diag.Context{Server: server}
	}
	den := diag.Denial{Method: d.Method, Tool: d.Tool, Link: d.Link, Kind: d.Kind.String(), Reason: d.Reason, Agent: a.agent}
	if d.Err != nil {
		den.Failure = d.Err.Error()
	}
	if ag := a.cfg.Agent(a.agent); ag != nil {
		den.AgentSource = ag.Source
	}
	for _, f := range a.cfg.Filters {
		if f.Name == d.Link {
			den.LinkSource = f.Source
		}
	}
	r := diag.PolicyDenied(c, den)
	r.Cause = d
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// suggestFlag adds the nearest flag name to cobra's "unknown flag" error,
// as cobra itself does for unknown commands.
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	add := func(f *pflag.Flag) { names = append(names, f.Name) }
	cmd.Flags().VisitAll(add)
	cmd.InheritedFlags().VisitAll(add)
	sort.Strings(names)
	if near := suggest.Nearest(name, names); near != "" {
		//lint:ignore ST1005 the blank line after it is the one every usage error has (err_unknown_flag.golden)
		return fmt.Errorf("%w\n\nDid you mean this?\n\t--%s\n", err, near)
	}
	return err
}

// cwdRoots offers the working directory as the one root: what the
// command line works on when the config names no roots.
func cwdRoots(context.Context) ([]mcp.Root, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return []mcp.Root{{URI: fileURI(dir), Name: filepath.Base(dir)}}, nil
}

// fileURI is the file:// URI of an absolute path, on Windows too
// (file:///C:/Users/...).
func fileURI(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}
