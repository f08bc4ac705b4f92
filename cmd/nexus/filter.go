package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// filterCmd is `nexus filter`: tools for WASM filters.
func (a *app) filterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "filter",
		Short: "Test and inspect WASM filters (policies and sanitizers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErr("nexus filter needs a verb: test or inspect")
		},
	}
	cmd.AddCommand(a.filterTestCmd(), a.filterInspectCmd())
	return cmd
}

func (a *app) filterTestCmd() *cobra.Command {
	var eventPath, configPath, sum, entrypoint, dataFile string
	var memoryMB int
	var callTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "test MODULE.wasm --event EVENT.json [--config CONFIG.json]",
		Short: "Run a WASM filter on one event and print its decision, the time taken and its log",
		Long: `Run a WASM filter on one event and print its decision, the time taken and
what the filter logged. The event is the JSON every filter sees
(sdk/event): {"phase": "request", "method": "tools/call", "server": {...},
"tool": {...}, "params": {...}} for a policy, with "phase": "response" and
a "result" for a sanitizer. --event - reads it from stdin.

A Rego policy compiled by opa build -t wasm (the bundle, or the
policy.wasm in it) is tested the same way: --entrypoint names the rule
that decides, and --config (with --data-file under it) is its data.

Exit codes: 0 when the filter allows or modifies, 4 when it denies, 1 when
it fails (a trap, a timeout, an invalid decision), 3 when it does not load.`,
		Example: `  nexus filter test filters/deny-destructive.wasm --event delete.json
  nexus filter test redact.wasm --event result.json --config redact.json -o json
  nexus filter test guard.tar.gz --entrypoint nexus/guard/decision --event call.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := a.readEvent(eventPath)
			if err != nil {
				return err
			}
			var cfg json.RawMessage
			if configPath != "" {
				b, err := readFlagFile("--config", configPath, maxFilterConfig, nil)
				if err != nil {
					return err
				}
				if !json.Valid(b) {
					return usageErr("--config: %s is not JSON", configPath)
				}
				cfg = b
			}
			f, err := host.OpenFilter(cmd.Context(), host.FilterSpec{Path: args[0], SHA256: sum, Config: cfg, MemoryMB: memoryMB, Timeout: callTimeout,
				Entrypoint: entrypoint, DataFile: dataFile})
			if err != nil {
				return &exitError{exitConnection, err}
			}
			defer f.Close(cmd.Context())
			res, err := f.Call(cmd.Context(), e)
			if a.output == "json" {
				a.printTestJSON(res, err)
			} else {
				a.printTest(res, err)
			}
			switch {
			case err != nil:
				return &exitError{exitToolError, err}
			case res.Decision.Action == event.Deny:
				return &exitError{exitDenied, fmt.Errorf("filter %q denied the event", f.Name())}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&eventPath, "event", "", "the event, a JSON file (- for stdin)")
	f.StringVar(&configPath, "config", "", "the filter's config, a JSON file (what the filter block's config holds)")
	f.StringVar(&sum, "sha256", "", "expected sha256 of the module; it is not run if it differs")
	f.IntVar(&memoryMB, "memory-mb", 0, "memory limit in MiB (default 32, as in a filter block)")
	f.DurationVar(&callTimeout, "call-timeout", 0, "time limit of the call (default 100ms, as in a filter block)")
	f.StringVar(&entrypoint, "entrypoint", "", "a Rego policy's rule that decides (nexus/guard/decision); not needed when it has only one")
	f.StringVar(&dataFile, "data-file", "", "a Rego policy's data, a JSON file (--config goes over it)")
	cmd.MarkFlagRequired("event")
	return cmd
}

// readEvent reads and checks an event file. Unknown fields are an error:
// a misspelt "tool" would otherwise test a different event than meant.
// Limits of the files nexus filter test reads: an event (its params and
// result inside), and a filter's config.
const (
	maxEvent        = 64 << 20
	maxFilterConfig = 10 << 20
)

func (a *app) readEvent(path string) (*event.Event, error) {
	b, err := readFlagFile("--event", path, maxEvent, a.stdin)
	if err != nil {
		return nil, err
	}
	e := new(event.Event)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(e); err != nil {
		return nil, usageErr("--event: %s is not an event: %v", path, err)
	}
	if e.Phase != event.PhaseRequest && e.Phase != event.PhaseResponse {
		return nil, usageErr(`--event: "phase" must be "request" (policies) or "response" (sanitizers), not %q`, e.Phase)
	}
	if e.Method == "" {
		return nil, usageErr(`--event: "method" is missing (for example "tools/call")`)
	}
	if e.ABI == 0 {
		e.ABI = event.ABI
	}
	return e, nil
}

func (a *app) printTest(res host.FilterResult, callErr error) {
	var b strings.Builder
	if callErr == nil {
		d := res.Decision
		fmt.Fprintf(&b, "Decision: %s\n", d.Action)
		if d.Reason != "" {
			fmt.Fprintf(&b, "Reason: %s\n", d.Reason)
		}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
		}{{"Params", d.Params}, {"Result", d.Result}} {
			if len(f.raw) == 0 {
				continue
			}
			var pretty bytes.Buffer
			if json.Indent(&pretty, f.raw, "  ", "  ") != nil {
				pretty.Reset()
				pretty.Write(f.raw)
			}
			fmt.Fprintf(&b, "%s:\n  %s\n", f.name, pretty.String())
		}
	}
	fmt.Fprintf(&b, "Time: %s\n", res.Duration.Round(time.Microsecond))
	if len(res.Log) > 0 {
		b.WriteString("Log:\n")
		for _, l := range res.Log {
			tag := l.Level
			if l.Stream != "log" {
				tag = l.Stream
			}
			fmt.Fprintf(&b, "  [%s] %s\n", tag, l.Text)
		}
	}
	a.printText(b.String())
	if callErr != nil {
		renderAll(a.stderr, callErr)
	}
}

func (a *app) printTestJSON(res host.FilterResult, callErr error) {
	logs := make([]map[string]string, 0, len(res.Log))
	for _, l := range res.Log {
		logs = append(logs, map[string]string{"level": l.Level, "stream": l.Stream, "text": l.Text})
	}
	out := map[string]any{"duration_ms": float64(res.Duration.Microseconds()) / 1000, "log": logs}
	if callErr != nil {
		out["error"] = callErr.Error()
	} else {
		out["decision"] = res.Decision
	}
	a.printJSON(out)
}

func (a *app) filterInspectCmd() *cobra.Command {
	var sum string
	cmd := &cobra.Command{
		Use:   "inspect MODULE.wasm",
		Short: "Print a WASM filter's ABI version, exports, imports, size and sha256",
		Long: `Print a WASM filter's ABI version, exports and imports (with their
signatures), size and sha256, what does not match the filter ABI, and the
filter block that pins it. --sha256 checks the module first, as a filter
block would.

Exit codes: 0 for a module that loads as a filter, 1 for a WebAssembly
module that does not implement ABI v1, 3 for a file that is not one.`,
		Example: `  nexus filter inspect filters/redact-secrets.wasm
  nexus filter inspect my-filter.wasm -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := filepath.Abs(args[0])
			if err != nil {
				return usageErr("%v", err)
			}
			info, err := host.InspectFilter(cmd.Context(), path, sum)
			if err != nil {
				return &exitError{exitConnection, err}
			}
			if a.output == "json" {
				a.printJSON(info)
			} else {
				a.printInspectFilter(info)
			}
			if len(info.Problems) > 0 {
				abi := "the Nexus filter ABI v1"
				if info.OPA() {
					abi = "OPA's WebAssembly ABI as Nexus calls it"
				}
				fmt.Fprintf(a.stderr, "Error: %s does not implement %s (%d problems above)\n", filepath.Base(path), abi, len(info.Problems))
				return &exitError{exitToolError, errors.New("not a filter")}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&sum, "sha256", "", "expected sha256 of the module; it is not read further if it differs")
	return cmd
}

func (a *app) printInspectFilter(info *host.FilterInfo) {
	var b strings.Builder
	abi := info.ABI
	if abi == "" {
		abi = "none (not a Nexus filter of ABI v1)"
	}
	fmt.Fprintf(&b, "Filter: %s\n", info.Name)
	fmt.Fprintf(&b, "Path: %s\n", info.Path)
	if info.Size < 1<<10 {
		fmt.Fprintf(&b, "Size: %d bytes\n", info.Size)
	} else {
		fmt.Fprintf(&b, "Size: %s (%d bytes)\n", humanSize(info.Size), info.Size)
	}
	fmt.Fprintf(&b, "SHA256: %s\n", info.SHA256)
	fmt.Fprintf(&b, "ABI: %s\n", abi)
	mem := fmt.Sprintf("%d pages (%s) at start", info.MemoryMin, humanSize(int64(info.MemoryMin)<<16))
	if info.MemoryMax > 0 {
		mem += fmt.Sprintf(", at most %d pages (%s)", info.MemoryMax, humanSize(int64(info.MemoryMax)<<16))
	}
	fmt.Fprintf(&b, "Memory: %s\n", mem)
	section := func(title string, syms []host.FilterSymbol) {
		fmt.Fprintf(&b, "\n%s:\n", title)
		if len(syms) == 0 {
			b.WriteString("  none\n")
			return
		}
		width := 0
		names := make([]string, len(syms))
		for i, s := range syms {
			names[i] = s.Name
			if s.Module != "" {
				names[i] = s.Module + "." + s.Name
			}
			width = max(width, len(names[i]))
		}
		for i, s := range syms {
			what := s.Signature
			if s.Kind != "func" {
				what = s.Kind
			}
			fmt.Fprintf(&b, "  %-*s  %s\n", width, names[i], what)
		}
	}
	section("Exports", info.Exports)
	section("Imports", info.Imports)
	if len(info.Problems) > 0 {
		b.WriteString("\nProblems:\n")
		for _, p := range info.Problems {
			fmt.Fprintf(&b, "  • %s\n", p)
		}
	} else {
		fmt.Fprintf(&b, "\nPin it in nexus.hcl:\n  filter %q {\n    kind   = \"policy\" # or \"sanitizer\"\n    wasm   = %q\n    sha256 = %q\n  }\n", info.Name, info.Path, info.SHA256)
	}
	a.printText(b.String())
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
