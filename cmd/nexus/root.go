package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/host/policy"
)

// Exit codes.
const (
	exitOK          = 0
	exitToolError   = 1
	exitServerError = 1 // a JSON-RPC error answer: the server processed the request and refused it
	exitUsage       = 2
	exitConnection  = 3
	exitDenied      = 4
	exitInterrupted = 130
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

// app holds what every command shares.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	configPaths []string
	output      string
	timeout     time.Duration
	logLevel    string
	agent       string
	yes         bool
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted")
		return exitInterrupted
	}
	code := exitConnection
	var (
		ee   *exitError
		us   *host.UnknownServerError
		ut   *host.UnknownToolError
		rerr   *mcp.RPCError
		denied *policy.DeniedError
		schema *host.SchemaError
	)
	switch {
	case errors.As(err, &ee):
		code = ee.code
		err = ee.err
	case isUsage(err), errors.As(err, &us), errors.As(err, &ut):
		code = exitUsage
	case errors.As(err, &denied):
		code = exitDenied
	case errors.As(err, &schema) && schema.What == "arguments":
		code = exitUsage
	case errors.As(err, &rerr):
		// The server answered, and said no: not a connection problem.
		code = exitServerError
	}
	if code == exitToolError && ee != nil {
		return code // the result is already printed
	}
	renderAll(stderr, err)
	if code == exitUsage && isUsage(err) {
		fmt.Fprintln(stderr, "Run 'nexus --help' for usage.")
	}
	return code
}

// isUsage recognizes cobra's own argument and flag errors.
func isUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument", "flag needs an argument", "required flag"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "nexus",
		Short:         "Nexus connects to MCP servers and calls their tools, resources and prompts",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       host.Version,
	}
	f := root.PersistentFlags()
	f.StringArrayVar(&a.configPaths, "config", nil, "config file, mcpServers JSON or nexus.hcl; repeatable, later wins (default: $NEXUS_CONFIG, else the config layers)")
	f.StringVarP(&a.output, "output", "o", "text", "output format: text or json")
	f.DurationVar(&a.timeout, "timeout", host.DefaultTimeout, "timeout for each request to a server")
	f.StringVar(&a.logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error, off")
	f.StringVar(&a.agent, "agent", host.CLIAgent, "act as this agent (its agent block sets permission, servers, allow and deny)")
	f.BoolVarP(&a.yes, "yes", "y", false, "approve every server a trusted agent would be asked about")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if a.output != "text" && a.output != "json" {
			return usageErr("--output must be text or json, not %q", a.output)
		}
		if a.timeout <= 0 {
			return usageErr("--timeout must be positive")
		}
		if hclog.LevelFromString(a.logLevel) == hclog.NoLevel {
			return usageErr("--log-level must be one of trace, debug, info, warn, error, off")
		}
		return nil
	}
	root.AddCommand(a.toolsCmd(), a.callCmd(), a.resourcesCmd(), a.readCmd(), a.promptsCmd(), a.promptCmd(), a.pingCmd(), a.testserverCmd(), a.configCmd(), a.serversCmd())
	root.AddCommand(a.pluginCmd())
	return root
}

func (a *app) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "nexus", Level: hclog.LevelFromString(a.logLevel), Output: a.stderr})
}

// openHost loads the config (--config, NEXUS_CONFIG, or the discovered
// layers, else the built-in default) and makes a host; the caller closes it.
func (a *app) openHost() (*host.Host, error) {
	cfg, err := a.loadConfig(false)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	a.printWarnings(cfg.Warnings)
	return host.New(cfg, host.Options{Logger: a.logger(), Timeout: a.timeout, Confirm: a.confirmer()}), nil
}
