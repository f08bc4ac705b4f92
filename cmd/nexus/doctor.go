package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
)

// clientFiles are the MCP config files a client reads, in the user's home
// and in the working directory, for goos.
func clientFiles(client, home, cwd, goos string) ([]string, bool) {
	switch client {
	case "claude-code":
		return []string{filepath.Join(home, ".claude.json"), filepath.Join(cwd, ".mcp.json")}, true
	case "claude-desktop":
		switch goos {
		case "darwin":
			return []string{filepath.Join(home, "Library", "Application Support", "Claude", "claude_desktop_config.json")}, true
		case "windows":
			return []string{filepath.Join(os.Getenv("APPDATA"), "Claude", "claude_desktop_config.json")}, true
		}
		return []string{filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")}, true
	case "cursor":
		return []string{filepath.Join(home, ".cursor", "mcp.json"), filepath.Join(cwd, ".cursor", "mcp.json")}, true
	case "vscode":
		return []string{filepath.Join(cwd, ".vscode", "mcp.json")}, true
	case "gemini":
		return []string{filepath.Join(home, ".gemini", "settings.json"), filepath.Join(cwd, ".gemini", "settings.json")}, true
	}
	return nil, false
}

var doctorClients = []string{"claude-code", "claude-desktop", "cursor", "vscode", "gemini"}

// doctorProbe bounds one entry's trial run: the whole exchange, and what
// is read of its output.
const doctorOutput = 4 << 20

func (a *app) doctorCmd() *cobra.Command {
	var (
		client  string
		files   []string
		probe   bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "doctor --client " + strings.Join(doctorClients, "|"),
		Short: "Check a client's MCP config for Nexus entries, and start each one as the client would",
		Long: `nexus doctor reads the MCP config files a client uses (in your home and in
the working directory), finds its entries that run Nexus (a command named
nexus), checks each (the command is found, its arguments start with serve)
and starts it as the client would: initialize, then tools/list. It says
what is wrong and how to fix it; exit 1 when anything is, or when no entry
runs Nexus.

Files read: claude-code ~/.claude.json and ./.mcp.json; claude-desktop its
claude_desktop_config.json; cursor ~/.cursor/mcp.json and ./.cursor/mcp.json;
vscode ./.vscode/mcp.json; gemini ~/.gemini/settings.json and
./.gemini/settings.json. --file names others.`,
		Example: `  nexus doctor --client claude-code
  nexus doctor --client cursor --file ~/work/.cursor/mcp.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := os.UserHomeDir()
			if err != nil {
				return usageErr("cannot find your home directory: %v", err)
			}
			cwd, err := os.Getwd()
			if err != nil {
				return usageErr("cannot read the working directory: %v", err)
			}
			paths, ok := clientFiles(client, home, cwd, runtime.GOOS)
			if !ok {
				return usageErr("unknown client %q; --client takes one of %s", client, strings.Join(doctorClients, ", "))
			}
			if len(files) > 0 {
				paths = files
			}
			d := &doctor{a: a, home: home, cwd: cwd, probe: probe, timeout: timeout}
			for _, p := range paths {
				d.file(cmd.Context(), client, p)
			}
			fmt.Fprintf(a.stdout, "\n%d Nexus entr%s, %d problem(s)\n", d.entries, plural(d.entries, "y", "ies"), d.problems)
			switch {
			case d.entries == 0:
				fmt.Fprintf(a.stdout, "No entry of %s runs Nexus. Add one: nexus config compile --via-gateway --agent NAME, or see README \"Put your agents behind Nexus\".\n", client)
				return &exitError{exitToolError, fmt.Errorf("no %s entry runs Nexus", client)}
			case d.problems > 0:
				return &exitError{exitToolError, fmt.Errorf("%d problem(s) in %s's Nexus entries", d.problems, client)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&client, "client", "", "the client: "+strings.Join(doctorClients, ", "))
	f.StringSliceVar(&files, "file", nil, "read this config file instead of the client's usual ones (repeatable)")
	f.BoolVar(&probe, "probe", true, "start each Nexus entry as the client would (initialize, tools/list)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "how long one entry gets to answer")
	cmd.MarkFlagRequired("client")
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

type doctor struct {
	a                 *app
	home, cwd         string
	probe             bool
	timeout           time.Duration
	entries, problems int
}

func (d *doctor) say(format string, args ...any) { fmt.Fprintf(d.a.stdout, format+"\n", args...) }

func (d *doctor) problem(format string, args ...any) {
	d.problems++
	d.say("    problem: "+format, args...)
}

// file checks one client config file.
func (d *doctor) file(ctx context.Context, client, path string) {
	shown := shortenPath(path, d.home)
	if _, err := os.Stat(path); err != nil {
		d.say("%s: %s: not found", client, shown)
		return
	}
	d.say("%s: %s", client, shown)
	cfg, err := host.LoadConfig(host.ConfigOptions{Files: []string{path}, Dir: d.cwd, Home: d.home, NoDefault: true, AllowUnset: true})
	if err != nil {
		d.problems++
		d.say("    problem: the file does not load (the client may not read it either):")
		for l := range strings.SplitSeq(strings.TrimRight(err.Error(), "\n"), "\n") {
			d.say("      %s", l)
		}
		return
	}
	for _, s := range cfg.Servers() {
		if s.Type != host.TypeStdio || len(s.Command) == 0 || !isNexus(s.Command[0]) {
			continue
		}
		d.entries++
		d.say("  %s: %s", s.Name, strings.Join(s.Command, " "))
		d.entry(ctx, s)
	}
}

// isNexus says whether a command runs Nexus.
func isNexus(command string) bool {
	base := strings.TrimSuffix(filepath.Base(command), ".exe")
	return base == "nexus"
}

func shortenPath(p, home string) string {
	if home != "" && strings.HasPrefix(p, home+string(filepath.Separator)) {
		return "~" + p[len(home):]
	}
	return p
}

// entry checks one entry that runs Nexus, then starts it.
func (d *doctor) entry(ctx context.Context, s *host.Server) {
	bin, err := exec.LookPath(s.Command[0])
	if err != nil {
		d.problem("%s is not found on this PATH (%v); the client starts it with its own PATH, which is often shorter: give the full path (%s)", s.Command[0], err, "the output of: command -v nexus")
		return
	}
	args := s.Command[1:]
	if len(args) == 0 || args[0] != "serve" {
		d.problem(`its arguments do not start with "serve": the client would run "nexus %s", not the gateway; use ["serve", "--agent", "NAME"]`, strings.Join(args, " "))
		return
	}
	if !slices.Contains(args, "--agent") && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--agent=") }) {
		d.say("    note: no --agent: it acts as agent %q", "cli")
	}
	if !d.probe {
		return
	}
	d.run(ctx, s, bin)
}

// run starts the entry as the client would and asks initialize and
// tools/list, within the timeout.
func (d *doctor) run(ctx context.Context, s *host.Server, bin string) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, s.Command[1:]...)
	cmd.Dir = d.cwd
	if s.Cwd != "" {
		cmd.Dir = s.Cwd
	}
	cmd.Env = os.Environ()
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"nexus-doctor","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &limitWriter{w: &stderr, n: doctorOutput}
	out, err := cmd.StdoutPipe()
	if err != nil {
		d.problem("%v", err)
		return
	}
	if err := cmd.Start(); err != nil {
		d.problem("it does not start: %v", err)
		return
	}
	answers := map[string]json.RawMessage{}
	sc := bufio.NewScanner(io.LimitReader(out, doctorOutput))
	sc.Buffer(make([]byte, 64<<10), doctorOutput)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Error != nil {
			what := map[string]string{"1": "initialize", "2": "tools/list"}[string(m.ID)]
			d.problem("it answers %s with an error:", what)
			for l := range strings.SplitSeq(strings.TrimRight(m.Error.Message, "\n"), "\n") {
				d.say("      %s", l)
			}
			answers[string(m.ID)] = nil
			continue
		}
		answers[string(m.ID)] = m.Result
	}
	waitErr := cmd.Wait()
	for l := range strings.SplitSeq(stderr.String(), "\n") {
		if strings.Contains(l, "warning:") {
			d.say("    note: %s", strings.TrimSpace(l))
		}
	}
	init, initOK := answers["1"]
	switch {
	case ctx.Err() != nil:
		d.problem("no answer within %v (a slow server behind it? --timeout gives it longer)", d.timeout)
	case !initOK:
		d.problem("it exited without answering initialize (%v); its stderr:\n%s", waitErr, strings.TrimRight(indent(stderr.String(), "      "), "\n"))
	case init == nil:
		// The error was said.
	default:
		var tools struct {
			Tools []json.RawMessage `json:"tools"`
		}
		json.Unmarshal(answers["2"], &tools)
		d.say("    ok: answers initialize and lists %d tool(s)", len(tools.Tools))
	}
}

// limitWriter keeps the first n bytes written to it and drops the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
