package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
)

func (a *app) templatesCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "templates [SERVER]",
		Short: "List the resource templates of every configured server (or one: SERVER or --server)",
		Long: `List the resource templates of every configured server (or one: SERVER or --server).

A template's variables are filled in to make a URI for nexus read; nexus complete
--template suggests values for them when the server offers completions.`,
		Example: `  nexus templates
  nexus read testserver file:///users/2`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := serverArg(args, &server); err != nil {
				return err
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			return a.listTemplates(cmd.Context(), h, server)
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

// listTemplates prints the resource templates of every server, or of one.
func (a *app) listTemplates(ctx context.Context, h *host.Host, server string) error {
	if err := checkServer(h, server); err != nil {
		return err
	}
	rows, err := h.Templates(ctx, a.agent)
	rows = only(rows, server, func(t host.Template) string { return t.Server })
	if a.output == "json" {
		if rows == nil {
			rows = []host.Template{}
		}
		a.printJSON(rows)
	} else {
		var lines [][2]string
		for _, t := range rows {
			desc := t.Name
			if t.Title != "" {
				desc = t.Title
			}
			if t.MimeType != "" {
				desc += " (" + t.MimeType + ")"
			}
			lines = append(lines, [2]string{t.Server + " " + t.URITemplate, desc})
		}
		a.printTable(lines)
	}
	return a.partial(err, server)
}

func (a *app) completeCmd() *cobra.Command {
	var template string
	var ctxArgs []string
	cmd := &cobra.Command{
		Use:   "complete (SERVER.PROMPT | SERVER --template URI_TEMPLATE) ARGUMENT [PREFIX]",
		Short: "Ask a server to complete an argument of a prompt or a resource template",
		Long: `Ask a server for the values an argument of a prompt or of a resource template may
take (completion/complete), starting with PREFIX. Values print one per line.
--context passes arguments already chosen, which some servers use to narrow the list.`,
		Example: `  nexus complete testserver.code_review language py
  nexus complete testserver --template 'file:///users/{id}' id
  nexus complete github.review_pr pr --context repo=nexus-mcp/nexus`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := &mcp.CompleteParams{}
			var server string
			if template != "" {
				server = args[0]
				if strings.Contains(server, ".") {
					return usageErr("with --template the first argument is a server name, not %q", server)
				}
				p.Ref = mcp.CompleteReference{Type: "ref/resource", URI: template}
			} else {
				s, name, err := splitTarget(args[0], "prompt")
				if err != nil {
					return err
				}
				server = s
				p.Ref = mcp.CompleteReference{Type: "ref/prompt", Name: name}
			}
			p.Argument.Name = args[1]
			if len(args) == 3 {
				p.Argument.Value = args[2]
			}
			if len(ctxArgs) > 0 {
				vals := map[string]string{}
				for _, kv := range ctxArgs {
					k, v, ok := strings.Cut(kv, "=")
					if !ok || k == "" {
						return usageErr("--context %q is not name=value", kv)
					}
					vals[k] = v
				}
				p.Context = &struct {
					Arguments map[string]string `json:"arguments,omitempty"`
				}{vals}
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			a.target = server
			res, err := h.Complete(cmd.Context(), a.agent, server, p)
			if err != nil {
				return err
			}
			if a.output == "json" {
				if res.Completion.Values == nil {
					res.Completion.Values = []string{}
				}
				a.printJSON(res)
				return nil
			}
			a.printText(strings.Join(res.Completion.Values, "\n"))
			c := res.Completion
			switch {
			case len(c.Values) == 0:
				fmt.Fprintln(a.stderr, "no completions")
			case c.HasMore && c.Total != nil:
				fmt.Fprintf(a.stderr, "%d of %d values shown; type a longer prefix to narrow them\n", len(c.Values), *c.Total)
			case c.HasMore:
				fmt.Fprintf(a.stderr, "%d values shown, and there are more; type a longer prefix to narrow them\n", len(c.Values))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&template, "template", "", "complete a variable of this resource template (first argument: the server)")
	cmd.Flags().StringArrayVar(&ctxArgs, "context", nil, "an argument already chosen, name=value (repeatable)")
	return cmd
}

// finishCommands applies what every command gets, once all are added:
// suggestions for a mistyped verb at any level, and shell completion.
func (a *app) finishCommands(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && c.HasParent() && c.Runnable() {
			c.Args = subcommandArgs
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	a.registerCompletions(root)
}

// subcommandArgs rejects an unknown verb under a group of verbs (nexus
// config shwo) with the nearest names, as cobra does at the top level.
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return errors.New(msg)
}

// registerCompletions adds dynamic shell completion (cobra's completion
// command) of server names, from the config alone: completing must be
// instant and must not start servers, so tool names are not offered.
func (a *app) registerCompletions(root *cobra.Command) {
	servers := func(suffix string) cobra.CompletionFunc {
		return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			cfg, err := a.loadConfig(true)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, s := range cfg.Servers() {
				if s.Enabled && strings.HasPrefix(s.Name+suffix, toComplete) {
					out = append(out, cobra.CompletionWithDesc(s.Name+suffix, s.Type+" server from "+s.Source.String()))
				}
			}
			dir := cobra.ShellCompDirectiveNoFileComp
			if suffix != "" {
				dir |= cobra.ShellCompDirectiveNoSpace
			}
			return out, dir
		}
	}
	fixed := func(vals ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
	}
	root.RegisterFlagCompletionFunc("output", fixed("text", "json"))
	root.RegisterFlagCompletionFunc("log-level", fixed("trace", "debug", "info", "warn", "error", "off"))
	root.RegisterFlagCompletionFunc("sampling", fixed(samplingAsk, samplingDeny))
	for _, c := range root.Commands() {
		switch c.Name() {
		case "call", "prompt":
			c.ValidArgsFunction = servers(".")
		case "read", "ping":
			c.ValidArgsFunction = servers("")
		case "complete":
			c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
				if t, _ := cmd.Flags().GetString("template"); t != "" {
					return servers("")(cmd, args, toComplete)
				}
				return servers(".")(cmd, args, toComplete)
			}
		}
		if c.Flags().Lookup("server") != nil {
			c.RegisterFlagCompletionFunc("server", servers(""))
		}
	}
}
