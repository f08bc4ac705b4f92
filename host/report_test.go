package host_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// TestReportIsHosts: a config error, a server that cannot start and a
// Describe result are each a *host.Report, with the internal report's
// fields and text, and the internal report still under it.
func TestReportIsHosts(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(bad, []byte(`{"mcpServers": {"files": {"command": 42}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, loadErr := host.LoadConfig(host.ConfigOptions{Files: []string{bad}})

	missing := filepath.Join(dir, "no-such-server")
	cfg, err := host.ParseConfig([]byte(`{"mcpServers": {"gone": {"command": "`+filepath.ToSlash(missing)+`"}},
	  "agents": {"bot": {"permission": "yolo"}}}`), "example.json")
	if err != nil {
		t.Fatal(err)
	}
	h := host.New(cfg, host.Options{})
	defer h.Close()
	_, callErr := h.CallTool(context.Background(), "bot", "gone.echo", map[string]any{}, nil)

	described := host.Describe(cfg, &host.UnknownServerError{Name: "gon", Known: []string{"gone"}}, host.DescribeOptions{})

	for _, c := range []struct {
		name string
		err  error
	}{{"LoadConfig", loadErr}, {"CallTool", callErr}, {"Describe", described}} {
		var rep *host.Report
		var d *diag.Report
		if !errors.As(c.err, &rep) || !errors.As(c.err, &d) {
			t.Errorf("%s: %T is not a *host.Report over a *diag.Report: %v", c.name, c.err, c.err)
			continue
		}
		t.Logf("%s: %T\n%s", c.name, c.err, c.err)
		if rep.Error() != d.Error() {
			t.Errorf("%s: host's text\n%s\nthe report's\n%s", c.name, rep.Error(), d.Error())
		}
		if rep.Title != d.Title || rep.Problem != d.Problem || rep.Source.String() != d.Source.String() ||
			rep.Brief() != d.Brief() || rep.Headline() != d.Headline() {
			t.Errorf("%s: fields differ: %+v, want %+v", c.name, rep, d)
		}
		var a, b bytes.Buffer
		host.Render(&a, c.err)
		diag.Render(&b, c.err)
		if a.String() != b.String() || !strings.HasPrefix(a.String(), d.Title) {
			t.Errorf("%s: rendered\n%s\nwant\n%s", c.name, a.String(), b.String())
		}
	}
}

// TestReportMadeByHand: a Report a program makes renders from its
// fields, as the internal report with the same fields does.
func TestReportMadeByHand(t *testing.T) {
	cause := errors.New("boom")
	rep := &host.Report{Title: "Tool Failed", Server: "gh", Source: host.Source{File: "mcp.json", Layer: "project", Line: 3},
		Command: []string{"gh", "--token", "secret"}, Problem: "it broke",
		Details: []host.Section{{Heading: "stderr", Lines: []string{"panic"}}}, Causes: []string{"a", "b"}, Fix: []string{"retry"}, Cause: cause}
	d := &diag.Report{Title: "Tool Failed", Server: "gh", Source: diag.Source{File: "mcp.json", Layer: "project", Line: 3},
		Command: []string{"gh", "--token", "secret"}, Problem: "it broke",
		Details: []diag.Section{{Heading: "stderr", Lines: []string{"panic"}}}, Causes: []string{"a", "b"}, Fix: []string{"retry"}, Cause: cause}
	if rep.Error() != d.Error() || rep.Brief() != d.Brief() || rep.Headline() != d.Headline() || rep.Source.String() != d.Source.String() {
		t.Fatalf("hand-made report renders\n%s\nwant\n%s", rep.Error(), d.Error())
	}
	if strings.Contains(rep.Error(), "secret") {
		t.Errorf("the command's token is shown: %s", rep.Error())
	}
	if !errors.Is(rep, cause) {
		t.Error("a hand-made report does not wrap its Cause")
	}
	j := rep.JSON()
	if j.Kind != "Tool Failed" || j.Message != "it broke" || j.Source != d.JSON().Source || j.Cause != "boom" {
		t.Errorf("JSON %+v", j)
	}
	if got := host.MaskCommand([]string{"gh", "--token", "secret"}); strings.Join(got, " ") != strings.Join(diag.MaskCommand([]string{"gh", "--token", "secret"}), " ") {
		t.Errorf("MaskCommand %q", got)
	}
	if got := host.MaskURLs("https://u:pw@example.test/x"); strings.Contains(got, "pw") {
		t.Errorf("MaskURLs %q", got)
	}
}

// TestReportsOfAConfig: a config with several problems is one error;
// Reports lists each as a *host.Report, and ConfigErrors joins them back
// into the same text.
func TestReportsOfAConfig(t *testing.T) {
	_, err := host.ParseConfig([]byte(`{"mcpServers": {"a": {"command": 42}, "b": {"command": true}}}`), "mcp.json")
	reps := host.Reports(err)
	if len(reps) != 2 {
		t.Fatalf("%d reports in %v", len(reps), err)
	}
	var first *host.Report
	if !errors.As(err, &first) || first.Server != reps[0].Server {
		t.Errorf("errors.As found %+v", first)
	}
	if joined := host.ConfigErrors(reps); joined.Error() != err.Error() || len(host.Reports(joined)) != 2 {
		t.Errorf("ConfigErrors gives\n%v\nwant\n%v", joined, err)
	}
}

// TestReportEdited: a copy of a Report with a fix added renders with it,
// alone and joined, as `nexus config validate` adds one.
func TestReportEdited(t *testing.T) {
	_, err := host.ParseConfig([]byte(`{"mcpServers": {"a": {"command": 42}}}`), "mcp.json")
	reps := host.Reports(err)
	if len(reps) != 1 {
		t.Fatalf("%d reports in %v", len(reps), err)
	}
	r := *reps[0]
	r.Fix = append(r.Fix, "Or ask a colleague")
	var b bytes.Buffer
	host.Render(&b, &r)
	for name, s := range map[string]string{"Error": r.Error(), "Render": b.String(), "ConfigErrors": host.ConfigErrors([]*host.Report{&r}).Error()} {
		if !strings.Contains(s, "Or ask a colleague") {
			t.Errorf("%s leaves out the added fix:\n%s", name, s)
		}
	}
	if strings.Contains(reps[0].Error(), "colleague") {
		t.Error("the copy's fix reached the original")
	}
}
