package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/host/testserver"
)

// splitTarget splits "server.name"; server names cannot hold a dot.
func splitTarget(s, what string) (string, string, error) {
	server, name, ok := strings.Cut(s, ".")
	if !ok || server == "" || name == "" {
		return "", "", usageErr("%q is not SERVER.%s (for example testserver.echo)", s, strings.ToUpper(what))
	}
	return server, name, nil
}

// parseArgs turns key=value pairs into a JSON object; a value that parses as
// JSON is JSON, anything else is a string.
func parseArgs(pairs []string, argsJSON string) (map[string]any, error) {
	out := map[string]any{}
	if argsJSON != "" {
		if err := json.Unmarshal([]byte(argsJSON), &out); err != nil {
			return nil, usageErr("--args-json is not a JSON object: %v", err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usageErr("argument %q is not key=value (for example message=hello or count=3)", p)
		}
		var j any
		if json.Unmarshal([]byte(v), &j) == nil {
			out[k] = j
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// eachServer runs fn for the selected (or every enabled) server concurrently,
// prints per-server failures, and reports whether any failed.
func (a *app) eachServer(ctx context.Context, h *host.Host, only string, fn func(ctx context.Context, server string, c *mcp.Client) error) error {
	var names []string
	if only != "" {
		names = []string{only}
	} else {
		for _, s := range h.Servers() {
			names = append(names, s.Name)
		}
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := h.Client(ctx, name)
			if err == nil {
				err = fn(ctx, name, c)
			}
			errs[i] = h.Explain(name, err)
		}()
	}
	wg.Wait()
	var failed []error
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	switch {
	case len(failed) == 0:
		return nil
	case len(failed) == 1:
		return failed[0]
	}
	for _, err := range failed[:len(failed)-1] {
		renderErr(a.stderr, err)
	}
	return failed[len(failed)-1]
}

func (a *app) toolsCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of every configured server (or one with --server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			type row struct {
				Server string `json:"server"`
				mcp.Tool
			}
			var mu sync.Mutex
			var rows []row
			err = a.eachServer(cmd.Context(), h, server, func(ctx context.Context, name string, c *mcp.Client) error {
				tools, err := c.ListTools(ctx)
				if err != nil {
					return err
				}
				mu.Lock()
				for _, t := range tools {
					rows = append(rows, row{name, t})
				}
				mu.Unlock()
				return nil
			})
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].Server < rows[j].Server })
			if a.output == "json" {
				a.printJSON(rows)
			} else {
				var lines [][2]string
				for _, r := range rows {
					lines = append(lines, [2]string{r.Server + "." + r.Name, firstLine(r.Description)})
				}
				a.printTable(lines)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

func (a *app) callCmd() *cobra.Command {
	var argsJSON string
	cmd := &cobra.Command{
		Use:   "call SERVER.TOOL [key=value ...]",
		Short: "Call a tool; a value that parses as JSON is sent as JSON, else as a string",
		Example: `  nexus call testserver.echo message=hello
  nexus call testserver.add a=2 b=3
  nexus call testserver.echo --args-json '{"message": "hi"}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, tool, err := splitTarget(args[0], "tool")
			if err != nil {
				return err
			}
			toolArgs, err := parseArgs(args[1:], argsJSON)
			if err != nil {
				return err
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			ctx := cmd.Context()
			c, err := h.Client(ctx, server)
			if err != nil {
				return err
			}
			res, err := c.CallTool(ctx, tool, toolArgs, nil)
			if err != nil {
				return h.Explain(server, err)
			}
			if a.output == "json" {
				a.printJSON(res)
			} else {
				a.printText(renderContent(res.Content, res.StructuredContent))
			}
			if res.IsError {
				return &exitError{exitToolError, fmt.Errorf("tool %s returned an error", args[0])}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args-json", "", "arguments as one JSON object (key=value pairs are merged over it)")
	return cmd
}

func (a *app) resourcesCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "resources",
		Short: "List the resources of every configured server (or one with --server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			type row struct {
				Server string `json:"server"`
				mcp.Resource
			}
			var mu sync.Mutex
			var rows []row
			err = a.eachServer(cmd.Context(), h, server, func(ctx context.Context, name string, c *mcp.Client) error {
				if c.Capabilities().Resources == nil {
					return nil
				}
				list, err := c.ListResources(ctx)
				if err != nil {
					return err
				}
				mu.Lock()
				for _, r := range list {
					rows = append(rows, row{name, r})
				}
				mu.Unlock()
				return nil
			})
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].Server < rows[j].Server })
			if a.output == "json" {
				a.printJSON(rows)
			} else {
				var lines [][2]string
				for _, r := range rows {
					desc := r.Name
					if r.MimeType != "" {
						desc += " (" + r.MimeType + ")"
					}
					lines = append(lines, [2]string{r.Server + " " + r.URI, desc})
				}
				a.printTable(lines)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

func (a *app) readCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "read SERVER URI",
		Short:   "Read a resource",
		Example: "  nexus read testserver file:///readme.txt",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			ctx := cmd.Context()
			c, err := h.Client(ctx, args[0])
			if err != nil {
				return err
			}
			res, err := c.ReadResource(ctx, args[1])
			if err != nil {
				return h.Explain(args[0], err)
			}
			if a.output == "json" {
				a.printJSON(res)
				return nil
			}
			var parts []string
			for _, rc := range res.Contents {
				parts = append(parts, renderResource(rc))
			}
			a.printText(strings.Join(parts, "\n"))
			return nil
		},
	}
}

func (a *app) promptsCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "prompts",
		Short: "List the prompts of every configured server (or one with --server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			type row struct {
				Server string `json:"server"`
				mcp.Prompt
			}
			var mu sync.Mutex
			var rows []row
			err = a.eachServer(cmd.Context(), h, server, func(ctx context.Context, name string, c *mcp.Client) error {
				if c.Capabilities().Prompts == nil {
					return nil
				}
				list, err := c.ListPrompts(ctx)
				if err != nil {
					return err
				}
				mu.Lock()
				for _, p := range list {
					rows = append(rows, row{name, p})
				}
				mu.Unlock()
				return nil
			})
			sort.SliceStable(rows, func(i, j int) bool { return rows[i].Server < rows[j].Server })
			if a.output == "json" {
				a.printJSON(rows)
			} else {
				var lines [][2]string
				for _, p := range rows {
					var argNames []string
					for _, arg := range p.Arguments {
						n := arg.Name
						if !arg.Required {
							n = "[" + n + "]"
						}
						argNames = append(argNames, n)
					}
					lines = append(lines, [2]string{p.Server + "." + p.Name + " " + strings.Join(argNames, " "), firstLine(p.Description)})
				}
				a.printTable(lines)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

func (a *app) promptCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "prompt SERVER.PROMPT [key=value ...]",
		Short:   "Get a prompt filled with arguments",
		Example: "  nexus prompt testserver.greeting name=Ada",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, name, err := splitTarget(args[0], "prompt")
			if err != nil {
				return err
			}
			pargs := map[string]string{}
			for _, p := range args[1:] {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return usageErr("argument %q is not key=value", p)
				}
				pargs[k] = v
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			ctx := cmd.Context()
			c, err := h.Client(ctx, server)
			if err != nil {
				return err
			}
			res, err := c.GetPrompt(ctx, name, pargs)
			if err != nil {
				return h.Explain(server, err)
			}
			if a.output == "json" {
				a.printJSON(res)
				return nil
			}
			var b strings.Builder
			if res.Description != "" {
				b.WriteString(res.Description + "\n\n")
			}
			for _, m := range res.Messages {
				fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, renderContent([]mcp.Content{m.Content}, nil))
			}
			a.printText(strings.TrimRight(b.String(), "\n"))
			return nil
		},
	}
}

func (a *app) pingCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ping [SERVER]",
		Short: "Check that servers answer, and how fast",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			only := ""
			if len(args) == 1 {
				only = args[0]
			}
			type row struct {
				Server string  `json:"server"`
				OK     bool    `json:"ok"`
				MS     float64 `json:"ms"`
			}
			var mu sync.Mutex
			var rows []row
			err = a.eachServer(cmd.Context(), h, only, func(ctx context.Context, name string, c *mcp.Client) error {
				d, err := c.Ping(ctx)
				if err != nil {
					return err
				}
				mu.Lock()
				rows = append(rows, row{name, true, float64(d.Microseconds()) / 1000})
				mu.Unlock()
				return nil
			})
			sort.Slice(rows, func(i, j int) bool { return rows[i].Server < rows[j].Server })
			if a.output == "json" {
				a.printJSON(rows)
			} else {
				var lines [][2]string
				for _, r := range rows {
					lines = append(lines, [2]string{r.Server, fmt.Sprintf("ok %.2f ms", r.MS)})
				}
				a.printTable(lines)
			}
			return err
		},
	}
}

func (a *app) testserverCmd() *cobra.Command {
	var toolCount, pageSize int
	cmd := &cobra.Command{
		Use:   "testserver",
		Short: "Run the built-in MCP test server on stdin/stdout",
		Long: `Run the built-in MCP test server on stdin/stdout.

Tools: echo, get_time, add, slow_operation (sends progress) and more; three
resources, a resource template and three prompts. --tool-count adds generated
tools for pagination tests (or MCP_TOOL_COUNT), --page-size sets the page size
of every list (or MCP_PAGE_SIZE).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := testserver.OptionsFromEnv(os.Getenv)
			if err != nil {
				return usageErr("%v", err)
			}
			if cmd.Flags().Changed("tool-count") {
				o.ToolCount = toolCount
			}
			if cmd.Flags().Changed("page-size") {
				o.PageSize = pageSize
			}
			o.Logger = a.logger()
			return testserver.ServeStdio(cmd.Context(), o, a.stdin, a.stdout)
		},
	}
	cmd.Flags().IntVar(&toolCount, "tool-count", 0, "number of generated tools tool_001.. to add")
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "page size for list results (0: one page)")
	return cmd
}
