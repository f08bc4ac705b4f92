package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
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
	atExit         []func()         // run when the command ends (telemetry's queued spans)
	auth           host.AuthOptions // the OAuth clients' settings (the auth commands set Out)

	ctx         context.Context // the command's, cancelled by Ctrl-C (nil in tests that build commands directly)
	configPaths []string
	output      string
	out         string // call --out: where the result's binary content goes

	noLock    bool // nexus lock: the lockfile is what it writes, not what it obeys
	modelOnce sync.Once
	sampler   *host.SamplingModel // the config's sampling model, nil without one

	levelMu  sync.Mutex
	shown    hclog.Level // servers' log messages shown from here (the shell's /loglevel); NoLevel: --log-level
	timeout  time.Duration
	logLevel string
	agent    string
	yes      bool
	sampling string
	// samplingChosen: --sampling was given, not defaulted.
	samplingChosen bool

	conOnce sync.Once
	con     *console         // the person at the terminal (interact.go)
	confirm *terminalConfirm // set when confirmation goes to the console

	// What the running command works on, so that an error can name the
	// server and where it is configured (errors.go).
	cfg    *host.Config
	target string

	onChange func(server string) // the shell's, to refresh its completions

	intMu       sync.Mutex
	onInterrupt func() // Ctrl-C; the shell replaces it to stop one command
	interrupted bool
}

// interrupt handles one SIGINT.
func (a *app) interrupt() {
	a.intMu.Lock()
	f := a.onInterrupt
	a.intMu.Unlock()
	if f != nil {
		f()
	}
}

// setInterrupt replaces what Ctrl-C does and returns the previous handler.
func (a *app) setInterrupt(f func()) func() {
	a.intMu.Lock()
	defer a.intMu.Unlock()
	old := a.onInterrupt
	a.onInterrupt = f
	return old
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	defer host.CleanupPlugins()
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	a.finishCommands(root)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)

	// Ctrl-C cancels the command's context: the host sends
	// notifications/cancelled for what is in flight, closes the servers, and
	// the exit code is 130. The shell takes Ctrl-C over for itself.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.onInterrupt = func() {
		a.intMu.Lock()
		a.interrupted = true
		a.intMu.Unlock()
		cancel()
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	go func() {
		for range sigs {
			a.interrupt()
		}
	}()
	a.ctx = ctx
	err := root.ExecuteContext(ctx)
	for _, f := range a.atExit {
		f()
	}
	a.intMu.Lock()
	interrupted := a.interrupted
	a.intMu.Unlock()
	if interrupted && (err != nil || ctx.Err() != nil) {
		if a.con != nil {
			a.con.setBar("")
		}
		fmt.Fprintln(stderr, "interrupted")
		return exitInterrupted
	}
	if err == nil {
		return exitOK
	}
	code, ee := exitCode(err)
	if ee != nil {
		err = ee.err
	}
	if code == exitToolError && ee != nil {
		return code // the result is already printed
	}
	if a.output == "json" {
		printJSONErrors(stderr, a.explainErr(err), code)
		return code
	}
	renderAll(stderr, a.explainErr(err))
	if code == exitUsage && isUsage(err) {
		fmt.Fprintln(stderr, "Run 'nexus --help' for usage.")
	}
	return code
}

// exitCode is the exit code err means, told by host's error types alone
// (and host/mcp's answer): a command's own *exitError says it, else usage
// (cobra's errors, an unknown server or tool, a plugin or filter config
// that does not load, arguments that break the schema), denied, a
// server's JSON-RPC error, and any other failure to reach a server.
// ee is the command's own, if it set the code.
func exitCode(err error) (code int, ee *exitError) {
	var (
		us         *host.UnknownServerError
		ut         *host.UnknownToolError
		rerr       *mcp.RPCError
		denied     *host.DeniedError
		filterLoad *host.FilterLoadError
		pluginCfg  *host.PluginConfigError
		schema     *host.SchemaError
	)
	switch {
	case errors.As(err, &ee):
		return ee.code, ee
	case isUsage(err), errors.As(err, &us), errors.As(err, &ut):
		return exitUsage, nil
	case errors.As(err, &denied):
		return exitDenied, nil
	case errors.As(err, &pluginCfg):
		return exitUsage, nil // a plugin config that fails the plugin's schema, as config validate says
	case errors.As(err, &filterLoad):
		return exitUsage, nil // a filter block that does not load is a config problem
	case errors.As(err, &schema) && schema.What == "arguments":
		return exitUsage, nil
	case errors.As(err, &rerr):
		// The server answered, and said no: not a connection problem.
		return exitServerError, nil
	}
	return exitConnection, nil
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
	f.StringVar(&a.sampling, "sampling", "", "answer servers' sampling requests: ask (type the reply at the terminal) or deny (default: ask on a terminal, else deny)")
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
		a.samplingChosen = a.sampling != ""
		switch a.sampling {
		case "":
			a.sampling = samplingDeny
			if a.console().canAsk() {
				a.sampling = samplingAsk
			}
		case samplingAsk:
			if !a.console().canAsk() {
				return usageErr("--sampling ask needs a terminal on stdin to type replies at; use --sampling deny")
			}
		case samplingDeny:
		default:
			return usageErr("--sampling must be ask or deny, not %q", a.sampling)
		}
		return nil
	}
	root.SetFlagErrorFunc(suggestFlag)
	root.AddCommand(a.toolsCmd(), a.callCmd(), a.resourcesCmd(), a.readCmd(), a.promptsCmd(), a.promptCmd(), a.pingCmd(), a.testserverCmd(), a.configCmd(), a.serversCmd())
	root.AddCommand(a.templatesCmd(), a.completeCmd(), a.shellCmd())
	root.AddCommand(a.pluginCmd())
	root.AddCommand(a.filterCmd())
	root.AddCommand(a.authCmd())
	root.AddCommand(a.versionCmd(), a.approvalsCmd(), a.lockCmd(), a.explainCmd(), a.auditCmd())
	root.AddCommand(a.trustCmd(), a.untrustCmd(), a.doctorCmd())
	root.SetVersionTemplate(versionText() + "\n")
	root.AddCommand(a.serveCmd())
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
	a.printWarnings(cfg.Warnings())
	a.cfg = cfg
	var pinned *host.Lock
	if !a.noLock {
		if pinned, err = a.readLock(cfg); err != nil {
			return nil, err
		}
	}
	tel, err := a.telemetry(cfg, false)
	if err != nil {
		return nil, err
	}
	opts := host.Options{
		Telemetry:   tel,
		Lock:        pinned,
		Logger:      a.logger(),
		Timeout:     a.timeout,
		Confirm:     a.confirmer(),
		Approvals:   a.approvals(cfg),
		Sampling:    a.samplingHandler,
		Elicitation: a.elicitationHandler,
		OnLog:       a.onLog,
		OnChange:    a.onChange,
		Auth:        a.auth,
	}
	if len(cfg.Roots()) == 0 {
		// No roots in the config: the directory Nexus runs in (the shell's
		// /cd changes it).
		opts.Roots = cwdRoots
	}
	return host.New(cfg, opts), nil
}
