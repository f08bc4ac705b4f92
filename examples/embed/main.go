package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/nexus-mcp/nexus/host"
)

// builtinConfig runs the built-in test server and defines the agent this
// program acts as. yolo means no confirmation prompts; allow limits it to
// the test server's tools. A real program would use "trusted" and pass a
// host.Options.Confirm that asks its user.
const builtinConfig = `{
  "mcpServers": {
    "testserver": {"command": "nexus", "args": ["testserver"]}
  },
  "agents": {
    "embed": {"permission": "yolo", "allow": ["testserver.*"]}
  }
}`

func main() {
	cfgPath := flag.String("config", "", "an mcpServers JSON file or nexus.hcl (default: a built-in config running `nexus testserver`)")
	agent := flag.String("agent", "embed", "the agent to act as; its agent block in the config grants its permission")
	tool := flag.String("tool", "mcp_testserver_echo", "the tool to call, by exposed name or as server.tool")
	args := flag.String("args", `{"message":"hello from an embedded Nexus"}`, "the tool's arguments, a JSON object")
	flag.Parse()

	// Kills any plugin process this program started, even on a panic
	// (Close is the orderly way; this is the last line of defence).
	defer host.CleanupPlugins()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *cfgPath, *agent, *tool, json.RawMessage(*args)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		host.CleanupPlugins() // os.Exit skips the deferred call
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, cfgPath, agent, tool string, args json.RawMessage) error {
	// 1. Configuration: any mcpServers JSON (Claude, Cursor, VS Code) or
	// nexus.hcl loads as it is; here either a file or JSON in memory.
	var cfg *host.Config
	var err error
	if cfgPath != "" {
		cfg, err = host.LoadConfig(host.ConfigOptions{Files: []string{cfgPath}})
	} else {
		cfg, err = host.ParseConfig([]byte(builtinConfig), "embedded")
	}
	if err != nil {
		return err // a *host.Report: file, line, problem, fix
	}

	// 2. The host. Nothing runs until Start (or first use).
	h := host.New(cfg, host.Options{Timeout: 30 * time.Second})
	defer h.Close() // ends every session and stops every server process

	// 3. Start connects every enabled server at once; one that fails does
	// not stop the others, and its error is kept.
	h.Start(ctx)
	for _, s := range h.Servers() {
		if s.Err != nil {
			fmt.Fprintf(out, "server %s did not connect:\n%v\n", s.Config.Name, s.Err)
		}
	}

	// 4. The tools the agent may use, named mcp_<server>_<tool> as LLM
	// providers accept them. Servers that failed are reported in err; the
	// others' tools are still there.
	tools, err := h.Tools(ctx, agent)
	if err != nil && len(tools) == 0 {
		return err
	}
	fmt.Fprintf(out, "%d tools for agent %q:\n", len(tools), agent)
	for _, t := range tools {
		fmt.Fprintf(out, "  %-32s %s.%s\n", t.Name, t.Server, t.Tool.Name)
	}

	// 5. A call goes through the whole chain: permission, rules, filters,
	// argument validation against the tool's inputSchema, the server,
	// output checks, sanitizers.
	res, err := h.CallTool(ctx, agent, tool, args, nil)
	if err != nil {
		var se *host.SchemaError
		if errors.As(err, &se) {
			return fmt.Errorf("the arguments were refused before reaching the server: %w", err)
		}
		return err
	}
	status := "result"
	if res.IsError {
		status = "the tool reported an error"
	}
	fmt.Fprintf(out, "%s of %s:\n", status, tool)
	for _, c := range res.Content {
		if c.Text != "" {
			fmt.Fprintf(out, "  %s\n", c.Text)
		} else {
			fmt.Fprintf(out, "  [%s content]\n", c.Type)
		}
	}
	return nil
}
