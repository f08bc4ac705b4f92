package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// loadConfig discovers and loads the configuration (or the --config
// files). allowUnset keeps undefined variables as references, for the
// verbs that never need their values.
func (a *app) loadConfig(allowUnset bool) (*host.Config, error) {
	opts := host.ConfigOptions{Files: a.configPaths, AllowUnset: allowUnset}
	if !allowUnset {
		opts.Prompter = a.prompter()
	}
	cfg, err := host.LoadConfig(opts)
	if err == nil && len(cfg.Untrusted()) > 0 && a.askTrust(cfg) {
		cfg, err = host.LoadConfig(opts) // what changed since it was shown stays untrusted
	}
	if err == nil && len(cfg.Untrusted()) > 0 {
		// An untrusted workspace config was left out; using the rest as if
		// it were not there would surprise more than refusing does.
		// --yes does not reach here: trust is given only by nexus trust.
		// The config goes back beside the error for its warnings alone.
		return cfg, host.UntrustedReport(cfg)
	}
	return cfg, err
}

// printWarnings writes the config's warnings to stderr, one a line.
func (a *app) printWarnings(ws []host.Warning) {
	for _, w := range ws {
		fmt.Fprintln(a.stderr, clean(w.String()))
	}
}

// clean makes config text (which may hold anything) safe for a terminal.
func clean(s string) string { return sanitize.ForDisplay(s) }

// renderAll prints every report in err (a config error lists them all, since
// fixing one at a time is slow), then how many there were.
func renderAll(w io.Writer, err error) {
	reps := host.Reports(err)
	if len(reps) <= 1 {
		host.Render(w, err)
		return
	}
	for i, r := range reps {
		if i > 0 {
			io.WriteString(w, "\n")
		}
		host.Render(w, r)
	}
	files := map[string]bool{}
	for _, r := range reps {
		files[r.Source.File] = true
	}
	fmt.Fprintf(w, "\n%d configuration errors in %d file(s).\n", len(reps), len(files))
}

func (a *app) configCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show, check and compile the configuration",
		Long: `Nexus merges its config layers, later wins per server name:
  ~/.nexus/ (mcp.json, nexus.hcl.json, nexus.hcl), every parent directory's .nexus/,
  ./.nexus/ and ./nexus.hcl; --config FILE (repeatable) or NEXUS_CONFIG replace the search.
With no config at all, the built-in default runs the test server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr("config needs a verb: init, show, validate or compile")
		},
	}
	cmd.AddCommand(a.configInitCmd(), a.configShowCmd(), a.configValidateCmd(), a.configCompileCmd())
	return cmd
}

func (a *app) configInitCmd() *cobra.Command {
	var from, out string
	var force bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a starter nexus.hcl, or convert a Claude, Cursor or VS Code config to one (--from)",
		Long: `Write a starter nexus.hcl: the built-in test server and commented examples of
the other blocks. With --from FILE, convert a client's config (Claude Desktop,
Claude Code, Cursor, VS Code) instead: its servers, with every value that came
from the environment still read from it (env("NAME")), and VS Code inputs as
sensitive variables read from NEXUS_INPUT_<ID>. An existing file is kept unless
--force.`,
		Example: `  nexus config init
  nexus config init --from ~/.cursor/mcp.json
  nexus config init --from .vscode/mcp.json --out - | less`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			data := host.DefaultHCL()
			if from != "" {
				var warns []string
				var err error
				if data, warns, err = host.ConfigToHCL(from); err != nil {
					return &exitError{exitUsage, err}
				}
				for _, w := range warns {
					fmt.Fprintln(a.stderr, "Warning: "+w)
				}
			}
			if out == "-" {
				_, err := a.stdout.Write(data)
				return err
			}
			if _, err := os.Stat(out); err == nil && !force {
				return usageErr("%s exists; it is kept (--force replaces it, --out - prints instead)", out)
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return err
			}
			// The person wrote this file here: where discovery finds it, it
			// is trusted as written (an edit later needs nexus trust again).
			if err := trustWritten(out); err != nil {
				fmt.Fprintf(a.stderr, "Warning: %v; trust it with nexus trust %s\n", err, out)
			}
			fmt.Fprintf(a.stdout, "Wrote %s. Check it with: nexus config validate --config %s\n", out, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "a client's config file to convert (mcpServers JSON, VS Code's mcp.json)")
	cmd.Flags().StringVar(&out, "out", "nexus.hcl", "where to write it (- for stdout)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing file")
	return cmd
}

func (a *app) configShowCmd() *cobra.Command {
	var showSecrets bool
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the merged configuration with each entry's origin (layer, file, line)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig(true)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			v := cfg.View(showSecrets)
			if a.output == "json" {
				return a.showJSON(v)
			}
			a.printWarnings(v.Warnings)
			a.showText(v)
			return nil
		},
	}
	cmd.Flags().BoolVar(&showSecrets, "show-secrets", false, "print credentials written in config files as they are (masked by default)")
	return cmd
}

func (a *app) showText(v *host.ConfigView) {
	w := a.stdout
	fmt.Fprintln(w, "Files, lowest layer first:")
	for _, f := range v.Files {
		fmt.Fprintln(w, "  "+clean(host.Source{File: f.Path, Layer: f.Layer}.String()))
	}
	if len(v.Roots) > 0 {
		fmt.Fprintln(w, "\nRoots:")
		for _, r := range v.Roots {
			fmt.Fprintln(w, "  "+clean(r))
		}
	}
	for _, group := range [][]host.ConfigEntry{v.Servers, v.Plugins, v.Filters, v.Agents, v.Blocks} {
		for _, e := range group {
			if e.Name == "" {
				fmt.Fprintf(w, "\n%s\n", e.Kind)
			} else {
				fmt.Fprintf(w, "\n%s %q\n", e.Kind, e.Name)
			}
			rows := [][2]string{{"origin", e.Source.String()}}
			for _, o := range e.Overrides {
				rows = append(rows, [2]string{"overrides", o.String()})
			}
			for _, k := range sortedKeys(e.Settings) {
				rows = append(rows, [2]string{k, oneLine(e.Settings[k])})
			}
			width := 0
			for _, r := range rows {
				width = max(width, len(r[0]))
			}
			for _, r := range rows {
				fmt.Fprintf(w, "  %-*s  %s\n", width+1, r[0]+":", clean(r[1]))
			}
		}
	}
}

// oneLine writes v as JSON on one line, spaced as people write it:
// ["-y", "pkg"], {"KEY": "value"}.
func oneLine(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	raw := strings.TrimSuffix(b.String(), "\n")
	var out strings.Builder
	inStr, esc := false, false
	for _, c := range raw {
		out.WriteRune(c)
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == ',' || c == ':'):
			out.WriteByte(' ')
		}
	}
	return out.String()
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// origin is a Source as JSON.
type origin struct {
	Layer  string `json:"layer"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func toOrigin(s host.Source) origin { return origin{s.Layer, s.File, s.Line, s.Column} }

func (a *app) showJSON(v *host.ConfigView) error {
	type entry struct {
		Name      string         `json:"name"`
		Origin    origin         `json:"origin"`
		Overrides []origin       `json:"overrides,omitempty"`
		Settings  map[string]any `json:"settings"`
	}
	entries := func(es []host.ConfigEntry) []entry {
		out := []entry{}
		for _, e := range es {
			x := entry{Name: e.Name, Origin: toOrigin(e.Source), Settings: e.Settings}
			for _, o := range e.Overrides {
				x.Overrides = append(x.Overrides, toOrigin(o))
			}
			out = append(out, x)
		}
		return out
	}
	files := []origin{}
	for _, f := range v.Files {
		files = append(files, origin{Layer: f.Layer, File: f.Path})
	}
	warnings := []string{}
	for _, w := range v.Warnings {
		warnings = append(warnings, w.String())
	}
	doc := map[string]any{
		"files": files, "servers": entries(v.Servers), "plugins": entries(v.Plugins),
		"filters": entries(v.Filters), "agents": entries(v.Agents), "warnings": warnings,
	}
	if v.Roots != nil {
		doc["roots"] = v.Roots
	}
	for i, b := range v.Blocks {
		doc[b.Kind] = entries(v.Blocks[i : i+1])[0]
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

func (a *app) configValidateCmd() *cobra.Command {
	var allowUnset, skipPlugins bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check every config layer; exit 2 on any error, listing them all",
		Long: `Check every config layer; exit 2 on any error, listing them all.
--allow-unset checks a config whose secrets are not set in this environment
(CI checking the configs a repository ships): unset variables and ${VAR}
references are warnings instead of errors.
Every plugin a filter or server uses is started (checksum first, as at any
launch) to check their configs against the plugin's own schema;
--skip-plugins checks everything else where the plugins are not built.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig(allowUnset)
			if cfg != nil {
				a.printWarnings(cfg.Warnings())
			}
			if err != nil {
				return &exitError{exitUsage, err}
			}
			var plugins []string
			if !skipPlugins {
				var errs []*host.Report
				plugins, errs = a.checkPlugins(cmd.Context(), cfg)
				if len(errs) > 0 {
					return &exitError{exitUsage, host.ConfigErrors(errs)}
				}
			}
			for _, f := range cfg.Files() {
				fmt.Fprintln(a.stdout, "ok  "+clean(host.Source{File: f.Path, Layer: f.Layer}.String()))
			}
			for _, p := range plugins {
				fmt.Fprintln(a.stdout, "ok  "+p)
			}
			s := cfg.Summary()
			gateway := ""
			if s.Gateway {
				gateway = " and a gateway block"
			}
			ruleCount := ""
			if s.Rules > 0 {
				ruleCount = ", " + count(s.Rules, "rule") + " (every expression compiled)"
			}
			fmt.Fprintf(a.stdout, "The configuration is valid: %s, %s, %s, %s%s, %s%s.\n",
				count(s.Files, "file"), count(s.Servers, "server"), count(s.Plugins, "plugin"),
				count(s.Filters, "filter"), ruleCount, count(s.Agents, "agent"), gateway)
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowUnset, "allow-unset", false, "treat unset variables and ${VAR} references as warnings (to check shipped configs without their secrets)")
	cmd.Flags().BoolVar(&skipPlugins, "skip-plugins", false, "do not start plugins to check their configs against their schemas")
	return cmd
}

// checkPlugins starts the plugins cfg uses and checks their configs
// against the plugins' schemas: a line for each plugin whose configs all
// match, a report for each that does not or could not be started.
func (a *app) checkPlugins(ctx context.Context, cfg *host.Config) ([]string, []*host.Report) {
	var ok []string
	var errs []*host.Report
	for _, c := range host.CheckPlugins(ctx, cfg) {
		if len(c.Problems) == 0 {
			verb := "match"
			if c.Configs == 1 {
				verb = "matches"
			}
			ok = append(ok, fmt.Sprintf("plugin %q: %s %s its schema", c.Plugin, count(c.Configs, "config"), verb))
		}
		for _, p := range c.Problems {
			rep := p.Report
			if !p.Refused {
				// The plugin did not start: its report, and how to check
				// the rest meanwhile.
				r := *rep
				r.Fix = append(slices.Clone(r.Fix), "Or check everything else with nexus config validate --skip-plugins")
				rep = &r
			}
			errs = append(errs, rep)
		}
	}
	return ok, errs
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (a *app) configCompileCmd() *cobra.Command {
	var (
		format, viaAgent, viaURL string
		via, showSecrets         bool
	)
	cmd := &cobra.Command{
		Use:   "compile",
		Short: "Write the merged configuration as mcpServers JSON for other MCP clients",
		Long: `Writes the merged configuration to stdout:
  mcpservers  {"mcpServers": ...} for Claude Desktop and Claude Code
  vscode      {"servers", "inputs"} for VS Code's .vscode/mcp.json
  nexus-json  every Nexus setting, as JSON that loads back to the same config
Secrets (sensitive variables, env(), ${VAR}) are written as ${NAME} references, never as
values. What the target cannot express is listed as a warning on stderr.

With --via-gateway it writes a client config whose only server is Nexus:
nexus serve --agent NAME over stdio, or (--url) a running gateway's HTTP
endpoint with a bearer token the client fills in, so a team moves its
Claude Code, Cursor or VS Code configs behind Nexus in one command.`,
		Example: `  nexus config compile --format mcpservers > .mcp.json
  nexus config compile --format mcpservers --via-gateway --agent claude > .mcp.json
  nexus config compile --format vscode --via-gateway --url https://nexus.example.com/mcp > .vscode/mcp.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.loadConfig(true)
			if err != nil {
				return &exitError{exitUsage, err}
			}
			if cmd.Flags().Changed("agent") || cmd.Root().PersistentFlags().Changed("agent") {
				viaAgent = a.agent
			}
			if via {
				var files []string
				for _, p := range a.configPaths {
					abs, err := filepath.Abs(p)
					if err != nil {
						return usageErr("--config %s: %v", p, err)
					}
					files = append(files, abs)
				}
				out, warns, err := cfg.ViaGateway(format, viaAgent, viaURL, files)
				if err != nil {
					return usageErr("%v", err)
				}
				a.printWarnings(warns)
				_, err = a.stdout.Write(out)
				return err
			}
			if viaAgent != "" || viaURL != "" {
				return usageErr("--url and --agent (of compile) go with --via-gateway")
			}
			out, warns, err := cfg.Compile(format, showSecrets)
			if err != nil {
				return usageErr("--format: %v", err)
			}
			a.printWarnings(cfg.Warnings())
			a.printWarnings(warns)
			_, err = a.stdout.Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&format, "format", host.FormatMCPServers, "output format: "+strings.Join(host.CompileFormats(), ", "))
	f.BoolVar(&showSecrets, "show-secrets", false, "write credentials written in config files as they are (masked by default)")
	f.BoolVar(&via, "via-gateway", false, "write a client config whose only server is the Nexus gateway (with --agent or --url)")
	f.StringVar(&viaURL, "url", "", "with --via-gateway: the gateway's MCP endpoint (http or https URL)")
	return cmd
}

// termPrompter asks for VS Code inputs on the terminal, without echo for
// passwords.
type termPrompter struct {
	in  *os.File
	out io.Writer
}

// prompter returns a terminal prompter when stdin is a terminal; without
// one, inputs come from NEXUS_INPUT_<ID>.
func (a *app) prompter() host.Prompter {
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &termPrompter{in: f, out: a.stderr}
}

func (p *termPrompter) Prompt(in host.ConfigInput) (string, error) {
	label := in.Description
	if label == "" {
		label = in.ID
	}
	fmt.Fprintf(p.out, "%s (input %q; set %s to skip this question): ", clean(label), in.ID, in.EnvName())
	if in.Password {
		b, err := term.ReadPassword(int(p.in.Fd()))
		fmt.Fprintln(p.out)
		return string(b), err
	}
	// One byte at a time: a buffered reader would swallow what was typed
	// ahead for the next question.
	var line []byte
	b := make([]byte, 1)
	for {
		n, err := p.in.Read(b)
		if n == 1 && b[0] != '\n' {
			line = append(line, b[0])
			continue
		}
		if n == 1 || len(line) > 0 {
			return strings.TrimRight(string(line), "\r"), nil
		}
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
}
