package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/testserver"
)

// splitTarget splits "server.name"; server names cannot hold a dot.
func splitTarget(s, what string) (string, string, error) {
	server, name, ok := strings.Cut(s, ".")
	if !ok || server == "" || name == "" {
		return "", "", usageErr("%q is not SERVER.%s (for example testserver.echo)", s, strings.ToUpper(what))
	}
	return server, name, nil
}

// toolArgs are a call's arguments as typed: --args-json, then key=value
// pairs, which resolve types by the tool's input schema.
type toolArgs struct {
	base  map[string]any
	pairs []argPair
}

type argPair struct {
	key, value string
	json       bool // key:=value: always JSON
}

// parseArgs reads key=value and key:=value pairs over --args-json.
func parseArgs(pairs []string, argsJSON string) (*toolArgs, error) {
	t := &toolArgs{base: map[string]any{}}
	if argsJSON != "" {
		if err := json.Unmarshal([]byte(argsJSON), &t.base); err != nil {
			return nil, usageErr("--args-json is not a JSON object: %v", err)
		}
	}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		forced := strings.HasSuffix(k, ":")
		k = strings.TrimSuffix(k, ":")
		if !ok || k == "" {
			return nil, usageErr("argument %q is not key=value (for example message=hello or count=3)", p)
		}
		if forced && !json.Valid([]byte(v)) {
			return nil, usageErr("%s:=%s is not JSON: key:=VALUE sends VALUE as JSON (n:=3, tags:='[\"a\"]'); key=VALUE follows the tool's schema", k, v)
		}
		t.pairs = append(t.pairs, argPair{k, v, forced})
	}
	return t, nil
}

// resolve makes the arguments object. A key=value pair is a string where
// the tool's input schema says the property is a string (message=123 is
// "123"), and JSON where it says another type and the value parses (n=3,
// ok=true, tags=["a"]); for a property the schema does not type, a value
// that parses as JSON is JSON and anything else a string. key:=value is
// always JSON.
func (t *toolArgs) resolve(inputSchema json.RawMessage) map[string]any {
	var schema struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(inputSchema, &schema) // no schema: no types
	out := make(map[string]any, len(t.base)+len(t.pairs))
	for k, v := range t.base {
		out[k] = v
	}
	for _, p := range t.pairs {
		var j any
		parsed := json.Unmarshal([]byte(p.value), &j) == nil
		switch {
		case p.json:
			out[p.key] = j
		case wantsString(schema.Properties[p.key].Type):
			out[p.key] = p.value
		case parsed:
			out[p.key] = j
		default:
			out[p.key] = p.value
		}
	}
	return out
}

// wantsString says whether a schema's type admits a string ("string", or
// a list holding it).
func wantsString(typ json.RawMessage) bool {
	var one string
	if json.Unmarshal(typ, &one) == nil {
		return one == "string"
	}
	var many []string
	return json.Unmarshal(typ, &many) == nil && slices.Contains(many, "string")
}

// serverArg takes a listing's SERVER argument, the same as --server.
func serverArg(args []string, server *string) error {
	if len(args) == 0 {
		return nil
	}
	if *server != "" && *server != args[0] {
		return usageErr("SERVER %q and --server %q name different servers; give one", args[0], *server)
	}
	*server = args[0]
	return nil
}

// only keeps the rows of one server when --server is set.
func only[T any](rows []T, server string, of func(T) string) []T {
	if server == "" {
		return rows
	}
	var out []T
	for _, r := range rows {
		if of(r) == server {
			out = append(out, r)
		}
	}
	return out
}

// checkServer refuses --server naming a server that is not configured or
// is disabled (a listing would be empty without saying why).
func checkServer(h *host.Host, server string) error {
	if server == "" {
		return nil
	}
	s := h.Config().Server(server)
	if s == nil {
		return &host.UnknownServerError{Name: server, Known: h.Config().Names()}
	}
	if !s.Enabled {
		return h.Explain(server, &host.DisabledError{Server: server})
	}
	return nil
}

// partial prints what succeeded and returns the failures: a listing shows
// every server that answered even when another did not.
func (a *app) partial(err error, server string) error {
	if err == nil {
		return nil
	}
	var mine []error
	for _, e := range unjoin(err) {
		var se *host.ServerError
		if server != "" && errors.As(e, &se) && se.Server != server {
			continue
		}
		mine = append(mine, e)
	}
	if len(mine) == 0 {
		return nil
	}
	for _, e := range mine[:len(mine)-1] {
		renderErr(a.stderr, e)
		fmt.Fprintln(a.stderr)
	}
	return mine[len(mine)-1]
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func (a *app) toolsCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "tools [SERVER]",
		Short: "List the tools of every configured server (or one: SERVER or --server)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := serverArg(args, &server); err != nil {
				return err
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			_, err = a.listTools(cmd.Context(), h, server)
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

// listTools prints the tools of every server, or of one, and returns them.
func (a *app) listTools(ctx context.Context, h *host.Host, server string) ([]host.Tool, error) {
	if err := checkServer(h, server); err != nil {
		return nil, err
	}
	tools, err := h.Tools(ctx, a.agent)
	all := tools
	tools = only(tools, server, func(t host.Tool) string { return t.Server })
	if a.output == "json" {
		a.printJSON(tools)
	} else {
		var lines [][2]string
		for _, t := range tools {
			lines = append(lines, [2]string{t.Server + "." + t.Tool.Name, firstLine(t.Description)})
		}
		a.printTable(lines)
	}
	return all, a.partial(err, server)
}

func (a *app) callCmd() *cobra.Command {
	var argsJSON, out string
	cmd := &cobra.Command{
		Use:   "call SERVER.TOOL [key=value ...]",
		Short: "Call a tool; key=value arguments take the types the tool's schema gives them",
		Long: `Call a tool. key=value pairs are its arguments, typed by the tool's input schema: a
string property gets the value as written (message=123 sends "123"), a number, boolean,
object or array property gets it as JSON (n=3, ok=true, tags='["a"]'). Where the schema
gives no type, a value that parses as JSON is JSON and anything else a string.
key:=value always sends JSON; --args-json '{...}' gives the whole object.

While the tool runs, the progress it reports shows on stderr (a bar on a terminal, plain
lines otherwise) and its log messages at or above --log-level, tagged with the server.
Ctrl-C cancels the call (the server is told) and exits with 130.

A server may ask back during the call: sampling requests show on the terminal for you to
type the reply (--sampling deny refuses them), elicitation forms are asked field by
field. Without a terminal both are refused.`,
		Example: `  nexus call testserver.echo message=hello
  nexus call testserver.add a=2 b=3
  nexus call testserver.echo message=123          # "123": the schema says string
  nexus call testserver.echo --args-json '{"message": "hi"}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.HasPrefix(args[0], ".") || strings.HasSuffix(args[0], ".") {
				return usageErr("%q is not SERVER.TOOL (for example testserver.echo) or an exposed name (mcp_testserver_echo)", args[0])
			}
			if !strings.Contains(args[0], ".") && !strings.HasPrefix(args[0], "mcp_") {
				return usageErr("%q is not SERVER.TOOL (for example testserver.echo) or an exposed name (mcp_testserver_echo)", args[0])
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
			a.out = out
			return a.call(cmd.Context(), h, args[0], toolArgs)
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args-json", "", "arguments as one JSON object (key=value pairs are merged over it)")
	cmd.Flags().StringVar(&out, "out", "", "write the result's binary content (images, audio, embedded blobs) to this file, the second to FILE-2 and so on (- for stdout when it is not a terminal)")
	return cmd
}

// call calls a tool, its key=value arguments typed by its input schema,
// and prints its result.
func (a *app) call(ctx context.Context, h *host.Host, name string, args *toolArgs) error {
	a.target, _, _ = strings.Cut(name, ".")
	// A tool that cannot be looked up is called untyped: the call then
	// fails with its own precise error (a denial names its rule).
	var schema json.RawMessage
	if tool, err := h.Tool(ctx, a.agent, name); err == nil {
		schema = tool.InputSchema
	}
	res, err := a.callTool(ctx, h, name, args.resolve(schema))
	if err != nil {
		return err
	}
	switch {
	case a.output == "json":
		a.printJSON(res)
	case a.out != "" && !res.IsError:
		return a.writeBinaries(res, name)
	case res.IsError:
		a.printToolError(renderContent(res.Content, res.StructuredContent))
	default:
		a.printResult(renderContent(res.Content, res.StructuredContent))
	}
	if res.IsError {
		return &exitError{exitToolError, fmt.Errorf("tool %s returned an error", name)}
	}
	return nil
}

func (a *app) resourcesCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "resources [SERVER]",
		Short: "List the resources of every configured server (or one: SERVER or --server)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := serverArg(args, &server); err != nil {
				return err
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			_, err = a.listResources(cmd.Context(), h, server)
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

// listResources prints the resources of every server, or of one.
func (a *app) listResources(ctx context.Context, h *host.Host, server string) ([]host.Resource, error) {
	if err := checkServer(h, server); err != nil {
		return nil, err
	}
	rows, err := h.Resources(ctx, a.agent)
	all := rows
	rows = only(rows, server, func(r host.Resource) string { return r.Server })
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
	return all, a.partial(err, server)
}

func (a *app) readCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "read SERVER URI",
		Short: "Read a resource; --out FILE writes its bytes (a blob decoded)",
		Example: `  nexus read testserver file:///readme.txt
  nexus read testserver file:///logo.png --out logo.png
  nexus read testserver file:///logo.png --out - | file -`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			if out != "" {
				return a.readTo(cmd.Context(), h, args[0], args[1], out)
			}
			return a.read(cmd.Context(), h, args[0], args[1])
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the resource's bytes to this file (- for stdout when it is not a terminal)")
	return cmd
}

// readTo reads a resource and writes its contents' bytes, texts as they
// are and blobs decoded, in order.
func (a *app) readTo(ctx context.Context, h *host.Host, server, uri, path string) error {
	a.target = server
	res, err := h.ReadResource(ctx, a.agent, server, uri)
	if err != nil {
		return err
	}
	var data []byte
	for _, rc := range res.Contents {
		b, err := rc.Bytes()
		if err != nil {
			return fmt.Errorf("resource %s from server %q: %w", rc.URI, server, err)
		}
		data = append(data, b...)
	}
	return a.writeOut(path, data)
}

// writeBinaries writes a result's binary blocks (--out of call): the
// first to a.out, the next to a.out with -2, -3 ... before its extension;
// the result's text still prints, unless the bytes go to stdout.
func (a *app) writeBinaries(res *mcp.CallToolResult, name string) error {
	var blobs [][]byte
	var text []mcp.Content
	for _, c := range res.Content {
		var b64 string
		switch {
		case c.Type == mcp.ContentImage || c.Type == mcp.ContentAudio:
			b64 = c.Data
		case c.Type == mcp.ContentResource && c.Resource != nil && c.Resource.Blob != "":
			b64 = c.Resource.Blob
		default:
			text = append(text, c)
			continue
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return fmt.Errorf("tool %s returned %s content that is not valid base64: %w", name, c.Type, err)
		}
		blobs = append(blobs, b)
	}
	switch {
	case len(blobs) == 0:
		return fmt.Errorf("tool %s returned no binary content for --out (images, audio or embedded blobs); its result is printed without --out", name)
	case a.out == "-" && len(blobs) > 1:
		return usageErr("tool %s returned %d binary blocks; --out - writes one: give a file name (FILE, FILE-2, ...)", name, len(blobs))
	}
	for i, b := range blobs {
		path := a.out
		if i > 0 {
			ext := filepath.Ext(path)
			path = strings.TrimSuffix(path, ext) + "-" + strconv.Itoa(i+1) + ext
		}
		if err := a.writeOut(path, b); err != nil {
			return err
		}
	}
	if a.out != "-" && len(text) > 0 {
		a.printResult(renderContent(text, nil))
	}
	return nil
}

// writeOut writes data to path, or to stdout for "-" when stdout is not a
// terminal (raw bytes on a terminal can rewrite the screen).
func (a *app) writeOut(path string, data []byte) error {
	if path == "-" {
		if isTerminal(a.stdout) {
			return usageErr("--out - writes raw bytes to stdout, which is a terminal here; give a file name, or pipe the output")
		}
		_, err := a.stdout.Write(data)
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(a.stderr, "wrote %d bytes to %s\n", len(data), path)
	return nil
}

// read reads a resource and prints it.
func (a *app) read(ctx context.Context, h *host.Host, server, uri string) error {
	a.target = server
	res, err := h.ReadResource(ctx, a.agent, server, uri)
	if err != nil {
		return err
	}
	if a.output == "json" {
		a.printJSON(res)
		return nil
	}
	var parts []string
	for _, rc := range res.Contents {
		parts = append(parts, renderResource(rc))
	}
	a.printResult(strings.Join(parts, "\n"))
	return nil
}

func (a *app) promptsCmd() *cobra.Command {
	var server string
	cmd := &cobra.Command{
		Use:   "prompts [SERVER]",
		Short: "List the prompts of every configured server (or one: SERVER or --server)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := serverArg(args, &server); err != nil {
				return err
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			_, err = a.listPrompts(cmd.Context(), h, server)
			return err
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	return cmd
}

// listPrompts prints the prompts of every server, or of one.
func (a *app) listPrompts(ctx context.Context, h *host.Host, server string) ([]host.Prompt, error) {
	if err := checkServer(h, server); err != nil {
		return nil, err
	}
	rows, err := h.Prompts(ctx, a.agent)
	all := rows
	rows = only(rows, server, func(p host.Prompt) string { return p.Server })
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
	return all, a.partial(err, server)
}

func (a *app) promptCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "prompt SERVER.PROMPT [key=value ...]",
		Short:   "Get a prompt filled with arguments",
		Example: "  nexus prompt testserver.greeting name=Ada",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			server, name, pargs, err := promptArgs(args)
			if err != nil {
				return err
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			return a.prompt(cmd.Context(), h, server, name, pargs)
		},
	}
}

// promptArgs parses SERVER.PROMPT [key=value ...].
func promptArgs(args []string) (server, name string, pargs map[string]string, err error) {
	server, name, err = splitTarget(args[0], "prompt")
	if err != nil {
		return "", "", nil, err
	}
	pargs = map[string]string{}
	for _, p := range args[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return "", "", nil, usageErr("argument %q is not key=value", p)
		}
		pargs[k] = v
	}
	return server, name, pargs, nil
}

// prompt gets a prompt and prints its messages.
func (a *app) prompt(ctx context.Context, h *host.Host, server, name string, pargs map[string]string) error {
	a.target = server
	res, err := h.GetPrompt(ctx, a.agent, server, name, pargs)
	if err != nil {
		return err
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
	a.printResult(strings.TrimRight(b.String(), "\n"))
	return nil
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
			var names []string
			if len(args) == 1 {
				names = args
			} else {
				for _, s := range h.Config().Servers() {
					if s.Enabled {
						names = append(names, s.Name)
					}
				}
			}
			type row struct {
				Server string  `json:"server"`
				OK     bool    `json:"ok"`
				MS     float64 `json:"ms"`
				Error  string  `json:"error,omitempty"`
			}
			rows := make([]row, len(names))
			errs := make([]error, len(names))
			var wg sync.WaitGroup
			for i, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := h.Ping(cmd.Context(), a.agent, name)
					rows[i] = row{Server: name, OK: err == nil, MS: float64(d.Microseconds()) / 1000}
					if err != nil {
						rows[i].Error = firstLine(err.Error())
						errs[i] = err
					}
				}()
			}
			wg.Wait()
			if a.output == "json" {
				a.printJSON(rows)
			} else {
				var lines [][2]string
				for _, r := range rows {
					status := fmt.Sprintf("ok %.2f ms", r.MS)
					if !r.OK {
						status = "failed"
					}
					lines = append(lines, [2]string{r.Server, status})
				}
				a.printTable(lines)
			}
			return a.partial(errors.Join(errs...), "")
		},
	}
}

func (a *app) testserverCmd() *cobra.Command {
	var toolCount, pageSize int
	var httpAddr, wsAddr, variant string
	var conformance, modernOnly, legacyOnly bool
	cmd := &cobra.Command{
		Use:   "testserver",
		Short: "Run the built-in MCP test server on stdin/stdout (or HTTP with --http)",
		Long: `Run the built-in MCP test server on stdin/stdout.

Tools: echo, get_time, add, slow_operation (sends progress) and more; three
resources, a resource template and three prompts. --tool-count adds generated
tools for pagination tests (or MCP_TOOL_COUNT), --page-size sets the page size
of every list (or MCP_PAGE_SIZE). --http ADDR serves streamable HTTP at
http://ADDR/mcp instead, --ws ADDR MCP over WebSocket (bind to 127.0.0.1:
the server has no authentication). MCP_START_DELAY=200ms makes it wait
before serving, like a server that is slow to come up. --conformance adds the
fixtures the official conformance suite's server scenarios call.
--modern-only serves MCP 2026-07-28 alone (or MCP_MODERN_ONLY=1),
--legacy-only MCP 2025-11-25 and earlier alone (or MCP_LEGACY_ONLY=1). --variant
changed|poisoned changes the echo tool's definition (or MCP_TOOL_VARIANT);
--variant rug-pull adds a rug_pull tool that poisons it mid-session: for
trying nexus lock.`,
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
			o.Conformance = o.Conformance || conformance
			o.ModernOnly = o.ModernOnly || modernOnly
			o.LegacyOnly = o.LegacyOnly || legacyOnly
			if cmd.Flags().Changed("variant") {
				o.Variant = variant
			}
			if err := testserver.CheckOptions(o); err != nil {
				return usageErr("%v", err)
			}
			o.Logger = a.logger()
			if httpAddr != "" {
				ln, err := net.Listen("tcp", httpAddr)
				if err != nil {
					return &exitError{exitConnection, fmt.Errorf("testserver: cannot listen on %s: %w", httpAddr, err)}
				}
				fmt.Fprintf(a.stdout, "MCP endpoint (streamable HTTP): http://%s%s\n", ln.Addr(), testserver.EndpointPath)
				return testserver.ServeListener(cmd.Context(), o, ln)
			}
			if wsAddr != "" {
				return testserver.ServeWS(cmd.Context(), o, wsAddr)
			}
			return testserver.ServeStdio(cmd.Context(), o, a.stdin, a.stdout)
		},
	}
	cmd.Flags().StringVar(&wsAddr, "ws", "", "serve MCP over WebSocket (subprotocol mcp) on ADDR, such as 127.0.0.1:8765, instead of stdio")
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP (with sessions and SSE) on ADDR, such as 127.0.0.1:8080, instead of stdio")
	cmd.Flags().IntVar(&toolCount, "tool-count", 0, "number of generated tools tool_001.. to add")
	cmd.Flags().IntVar(&pageSize, "page-size", 0, "page size for list results (0: one page)")
	cmd.Flags().StringVar(&variant, "variant", "", `change the echo tool's definition: "changed", "poisoned", or "rug-pull" (adds rug_pull, which poisons it mid-session)`)
	cmd.Flags().BoolVar(&modernOnly, "modern-only", false, "serve MCP 2026-07-28 alone: initialize is refused naming it (or MCP_MODERN_ONLY=1)")
	cmd.Flags().BoolVar(&legacyOnly, "legacy-only", false, "serve MCP 2025-11-25 and earlier alone: server/discover is unknown and a request's modern _meta is not looked at (or MCP_LEGACY_ONLY=1)")
	cmd.Flags().BoolVar(&conformance, "conformance", false, "add the fixtures of the official conformance suite's server scenarios (tools test_*, resources test://..., prompts test_*; or MCP_CONFORMANCE=1)")
	return cmd
}
