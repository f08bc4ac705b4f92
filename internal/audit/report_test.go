package audit

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// A refused call's record carries its report, masked as the command line
// masks it, bounded, and chained like every other part of the record: a
// huge report is cut and says so, and the file still verifies.
func TestRecordReport(t *testing.T) {
	rep := &diag.Report{Title: "MCP Server Error", Server: "gh", URL: "https://api.example.com/mcp?api_key=s3cret",
		Command: []string{"srv", "--token", "s3cret"},
		Problem: "The server answered with an error from https://u:s3cret@host.example/x", Fix: []string{"Try again"}}
	stderr := make([]string, 5000)
	for i := range stderr {
		stderr[i] = strings.Repeat("<boom> ", 20)
	}
	huge := &diag.Report{Title: "MCP Server Crashed", Server: "gh", Problem: "The server exited",
		Details: []diag.Section{{Heading: "Server stderr", Lines: stderr}}, Fix: []string{"Run it by hand"}}

	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path})
	small, big := rec(1), rec(2)
	small.Decision, big.Decision = "deny", "error"
	small.SetReport(rep)
	big.SetReport(huge)
	w.Write(small)
	w.Write(big)
	writeN(t, w, 3, 1)
	if r, err := Verify(path); err != nil || r.Records != 3 {
		t.Fatalf("the chain: %+v %v", r, err)
	}
	ls := lines(t, path)
	if strings.Contains(ls[0], "s3cret") {
		t.Errorf("a secret reached the log: %s", ls[0])
	}
	var r0, r1 Record
	if err := json.Unmarshal([]byte(ls[0]), &r0); err != nil {
		t.Fatal(err)
	}
	var j diag.JSON
	if err := json.Unmarshal(r0.Report, &j); err != nil {
		t.Fatal(err)
	}
	if want := rep.JSON().Masked(); j.Headline() != want.Headline() || j.URL != want.URL || !slices.Equal(j.Fix, rep.Fix) || !slices.Equal(j.Command, want.Command) {
		t.Errorf("the report read back: %+v\nwant %+v", j, want)
	}
	if slices.Contains(r0.Flags, "report_truncated") {
		t.Error("a small report is flagged as cut")
	}
	if err := json.Unmarshal([]byte(ls[1]), &r1); err != nil {
		t.Fatal(err)
	}
	j = diag.JSON{}
	if err := json.Unmarshal(r1.Report, &j); err != nil {
		t.Fatal(err)
	}
	if len(r1.Report) > MaxReport || !slices.Contains(r1.Flags, "report_truncated") || j.Headline() != huge.Headline() || !slices.Equal(j.Fix, huge.Fix) {
		t.Errorf("the huge report: %d bytes, flags %v, %+v", len(r1.Report), r1.Flags, j)
	}
	// Set by hand, too big or not JSON: replaced, and flagged.
	hand := rec(4)
	hand.Report = json.RawMessage(`{"kind":` + strings.Repeat(" ", MaxReport) + `"x"}`)
	clamp(&hand)
	if string(hand.Report) != string(tooBig) || !slices.Contains(hand.Flags, "report_truncated") {
		t.Errorf("a report set by hand: %s %v", hand.Report, hand.Flags)
	}
}
