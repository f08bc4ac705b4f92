package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/bounded"
)

// maxSampleResult bounds --result: a sample, read whole.
const maxSampleResult = 10 << 20

func (a *app) explainCmd() *cobra.Command {
	var argsJSON, resultFile, method string
	cmd := &cobra.Command{
		Use:   "explain SERVER.TOOL [key=value ...] | --method resources/read SERVER URI | --method prompts/get SERVER.PROMPT [key=value ...]",
		Short: "Run the whole chain for a call without making it: each check's verdict, reason, source and time",
		Long: `Run the whole chain for a tool call as the agent (--agent) would make it, without
sending it to the server: the permission level and rules, the lockfile, the
policies' review of the tool's definition (tools/list), each policy in order,
and the argument schema, each with its verdict, its reason, where it is defined
(file:line) and its time. With --result FILE (a tools/call result, as JSON) the
sanitizers run on that sample too, and the result they leave is shown.
Arguments are given as for nexus call. Nobody is asked: where a trusted agent's
first use of a server would ask a person, the permission step says "ask".

--method resources/read SERVER URI and --method prompts/get SERVER.PROMPT
[key=value ...] explain a read or a prompt likewise (--result then takes a
resources/read or prompts/get result).

Exit 0 when the call would go through, 4 when it would be refused; -o json
prints the steps for machines. A filter in shadow mode shows would-deny or
would-modify and refuses nothing.`,
		Example: `  nexus explain testserver.echo message=hi
  nexus explain github.delete_repo repo=x --agent claude
  nexus explain testserver.echo message=hi --result result.json -o json
  nexus explain --method resources/read testserver test://static/hello`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch method {
			case "tools/call":
			case "resources/read", "prompts/get":
				return a.explainRequest(cmd, method, args, resultFile)
			default:
				return usageErr("--method %q: nexus explain runs tools/call, resources/read and prompts/get requests", method)
			}
			toolArgs, err := parseArgs(args[1:], argsJSON)
			if err != nil {
				return err
			}
			var sample *mcp.CallToolResult
			if resultFile != "" {
				if sample, err = readSample(resultFile); err != nil {
					return err
				}
			}
			h, err := a.openHost()
			if err != nil {
				return err
			}
			defer h.Close()
			var schema json.RawMessage
			if tool, err := h.Tool(cmd.Context(), a.agent, args[0]); err == nil {
				schema = tool.InputSchema
			}
			v, err := h.DryRun(cmd.Context(), a.agent, args[0], toolArgs.resolve(schema), sample)
			if err != nil {
				return err
			}
			if a.output == "json" {
				a.printJSON(explainJSON(a.agent, v))
			} else {
				a.printVerdict(a.agent, v)
			}
			if v.Err != nil {
				return &exitError{exitDenied, fmt.Errorf("the call would be refused")}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args-json", "", "arguments as one JSON object (key=value pairs are merged over it)")
	cmd.Flags().StringVar(&resultFile, "result", "", "a sample tools/call result (JSON) to run the sanitizers on")
	cmd.Flags().StringVar(&method, "method", "tools/call", "the request to explain")
	return cmd
}

// explainRequest is explain for a resources/read or a prompts/get.
func (a *app) explainRequest(cmd *cobra.Command, method string, args []string, resultFile string) error {
	var server, target string
	var promptArgs map[string]string
	if method == "resources/read" {
		if len(args) != 2 {
			return usageErr("--method resources/read takes SERVER URI, for example: nexus explain --method resources/read testserver test://static/hello")
		}
		server, target = args[0], args[1]
	} else {
		var ok bool
		if server, target, ok = strings.Cut(args[0], "."); !ok || server == "" || target == "" {
			return usageErr("--method prompts/get takes SERVER.PROMPT [key=value ...], for example: nexus explain --method prompts/get testserver.greet name=Ann")
		}
		promptArgs = map[string]string{}
		for _, kv := range args[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return usageErr("prompt argument %q is not key=value", kv)
			}
			promptArgs[k] = v
		}
	}
	var sample json.RawMessage
	if resultFile != "" {
		b, err := readBounded(resultFile)
		if err != nil {
			return err
		}
		if !json.Valid(b) {
			return usageErr("--result %s: not JSON; write the %s result as a server would send it", resultFile, method)
		}
		sample = b
	}
	h, err := a.openHost()
	if err != nil {
		return err
	}
	defer h.Close()
	v, err := h.DryRunRequest(cmd.Context(), a.agent, method, server, target, promptArgs, sample)
	if err != nil {
		return err
	}
	if a.output == "json" {
		a.printJSON(explainJSON(a.agent, v))
	} else {
		a.printVerdictFor(method, a.agent, v)
	}
	if v.Err != nil {
		return &exitError{exitDenied, fmt.Errorf("the request would be refused")}
	}
	return nil
}

// readFlagFile reads the file a flag names ("-": standard input), up to
// max bytes. A pipe is fine here (--event <(make-event)): the person
// running the command chose it, and the limit holds for it too.
func readFlagFile(flag, path string, max int64, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" || stdin == nil {
		f, err := os.Open(path)
		if err != nil {
			return nil, usageErr("%s: %v", flag, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, usageErr("%s %s: %v", flag, path, err)
	}
	if int64(len(b)) > max {
		return nil, usageErr("%s %s is over the %s limit", flag, path, bounded.Size(max))
	}
	return b, nil
}

// readBounded reads a --result file, up to maxSampleResult bytes.
func readBounded(path string) ([]byte, error) {
	return readFlagFile("--result", path, maxSampleResult, nil)
}

// readSample reads a --result file: a tools/call result, bounded.
func readSample(path string) (*mcp.CallToolResult, error) {
	b, err := readBounded(path)
	if err != nil {
		return nil, err
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, usageErr("--result %s: not a tools/call result (%v); write one as a server would send it, such as {\"content\": [{\"type\": \"text\", \"text\": \"...\"}]}", path, err)
	}
	return &r, nil
}

// printVerdict prints the steps as a table, each one's reason and flags
// under it, and the verdict.
func (a *app) printVerdict(agent string, v *host.Verdict) { a.printVerdictFor("tools/call", agent, v) }

func (a *app) printVerdictFor(method, agent string, v *host.Verdict) {
	target := v.Server + "." + v.Tool
	if method == "resources/read" {
		target = v.Server + " " + v.Tool
	}
	fmt.Fprintf(a.stdout, "%s %s as agent %q, not sent:\n\n", method, target, agent)
	rows := [][]string{{"#", "CHECK", "ON", "VERDICT", "TIME", "DEFINED AT"}}
	for i, s := range v.Steps {
		src := s.Source
		if src == "" {
			src = "built in"
		}
		rows = append(rows, []string{fmt.Sprint(i + 1), s.Link, s.Method, s.Action, stepTime(s.Duration), src})
	}
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for c, cell := range r {
			width[c] = max(width[c], len(cell))
		}
	}
	for n, r := range rows {
		var b strings.Builder
		b.WriteString(" ")
		for c, cell := range r {
			if c == len(r)-1 {
				b.WriteString("  " + cell)
			} else {
				fmt.Fprintf(&b, "  %-*s", width[c], cell)
			}
		}
		fmt.Fprintln(a.stdout, strings.TrimRight(b.String(), " "))
		if n == 0 {
			continue
		}
		s := v.Steps[n-1]
		indent := strings.Repeat(" ", width[0]+5) // under CHECK
		if s.Reason != "" && s.Action != "allow" {
			fmt.Fprintln(a.stdout, indent+clean(s.Reason))
		}
		for _, f := range s.Flags {
			fmt.Fprintln(a.stdout, indent+"flag: "+clean(f))
		}
	}
	fmt.Fprintln(a.stdout)
	switch {
	case v.Err != nil:
		fmt.Fprintf(a.stdout, "Refused: %s\n", clean(v.Err.Error()))
	case v.Result != nil:
		fmt.Fprintln(a.stdout, "Allowed. The sample result, as the sanitizers leave it:")
		a.printResult(renderContent(v.Result.Content, v.Result.StructuredContent))
	case v.Raw != nil:
		fmt.Fprintln(a.stdout, "Allowed. The sample result, as the sanitizers leave it:")
		var out bytes.Buffer
		if json.Indent(&out, v.Raw, "", "  ") != nil {
			out.Reset()
			out.Write(v.Raw)
		}
		fmt.Fprintln(a.stdout, clean(out.String()))
	default:
		fmt.Fprintln(a.stdout, "Allowed.")
	}
}

// stepTime is a step's time for the table, right-aligned in a fixed
// width so the column lines up and keeps its width whatever the times.
func stepTime(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%8.3f ms", float64(d)/1e6)
}

// explainJSON is the verdict for -o json.
func explainJSON(agent string, v *host.Verdict) any {
	type step struct {
		Link   string   `json:"link"`
		Method string   `json:"method,omitempty"`
		Action string   `json:"action"`
		Reason string   `json:"reason,omitempty"`
		Flags  []string `json:"flags,omitempty"`
		Source string   `json:"source,omitempty"`
		Micros float64  `json:"us"`
	}
	out := struct {
		Agent   string              `json:"agent"`
		Server  string              `json:"server"`
		Tool    string              `json:"tool"`
		Allowed bool                `json:"allowed"`
		Refusal string              `json:"refusal,omitempty"`
		Link    string              `json:"link,omitempty"`
		Steps   []step              `json:"steps"`
		Result  *mcp.CallToolResult `json:"result,omitempty"`
		Raw     json.RawMessage     `json:"sampleResult,omitempty"`
	}{Agent: agent, Server: v.Server, Tool: v.Tool, Allowed: v.Err == nil, Result: v.Result, Raw: v.Raw, Steps: []step{}}
	if v.Err != nil {
		out.Refusal = v.Err.Error()
		var de *host.DeniedError
		if errors.As(v.Err, &de) {
			out.Link = de.Link
		}
	}
	for _, s := range v.Steps {
		out.Steps = append(out.Steps, step{Link: s.Link, Method: s.Method, Action: s.Action, Reason: s.Reason, Flags: s.Flags, Source: s.Source,
			Micros: float64(s.Duration.Nanoseconds()) / 1e3})
	}
	return out
}
