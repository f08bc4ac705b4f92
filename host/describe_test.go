package host_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
)

// TestDescribeHints: the fixes of a report name a program's commands and
// flags when it gives Hints, and only the config and the API when not.
func TestDescribeHints(t *testing.T) {
	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {"ts": {"command": "nexus", "args": ["testserver"]}}}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	hints := host.Hints{
		ListTools:   func(server string, schemas bool) string { return "tools " + server },
		ListServers: "servers",
		TimeoutFlag: "--wait",
		Arguments:   "args are JSON",
	}
	cases := []struct {
		name      string
		err       error
		bare, cli []string
	}{
		{"unknown server", &host.UnknownServerError{Name: "gh", Known: []string{"ts"}},
			[]string{"Add the server to one of these files, or check the name"},
			[]string{"Add the server to one of these files, or check the name: servers"}},
		{"unknown tool", &host.UnknownToolError{Name: "ehco", Server: "ts"},
			[]string{"Check the name against the tools the agent may use"},
			[]string{"List the tools: tools ts"}},
		{"schema", &host.SchemaError{Server: "ts", Tool: "echo", What: "arguments", Problems: []string{"/message: required"}},
			[]string{"See the tool's inputSchema"},
			[]string{"See the tool's inputSchema: tools ts", "args are JSON"}},
		{"timeout", &mcp.TimeoutError{Method: "tools/call", After: time.Second},
			[]string{`Allow longer: "timeout" (seconds) in the server's entry in example.json`},
			[]string{`Allow longer: --wait 2m, or "timeout" (seconds) in the server's entry in example.json`}},
		{"deadline", context.DeadlineExceeded,
			[]string{"Allow longer: the request's deadline, or Options.Timeout"},
			[]string{"Allow longer with --wait"}},
	}
	for _, c := range cases {
		for _, h := range []struct {
			hints host.Hints
			want  []string
		}{{host.Hints{}, c.bare}, {hints, c.cli}} {
			err := host.Describe(cfg, c.err, host.DescribeOptions{Server: "ts", Timeout: time.Second, Hints: h.hints})
			var rep *host.Report
			if !errors.As(err, &rep) {
				t.Fatalf("%s: not a report: %v", c.name, err)
			}
			if !slices.Equal(rep.Fix, h.want) {
				t.Errorf("%s: fix %q, want %q", c.name, rep.Fix, h.want)
			}
			if !errors.Is(err, c.err) && !errors.As(err, new(*host.UnknownServerError)) {
				t.Errorf("%s: the report does not wrap the error", c.name)
			}
		}
	}
	// Errors about no server, and reports, pass through.
	plain := errors.New("usage")
	if got := host.Describe(cfg, plain, host.DescribeOptions{}); got != plain {
		t.Errorf("a usage error became %v", got)
	}
}
