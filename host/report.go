package host

import (
	"errors"
	"io"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Report is an error a person can act on: what went wrong, where (the
// server, the config file and line), the likely causes and the fix.
// Configuration and connection errors are Reports, or hold them; Error
// renders the whole text, Render prints it as the nexus command does.
//
// It is host's own, made once at the boundary (hostErr) around the
// error that held the internal report: its fields are that report's and
// it Unwraps to that error, so errors.As finds everything it found
// before. It renders from its fields, so a copy with a fix added (as
// `nexus config validate` adds one) shows it; a report that came wrapped
// (fmt.Errorf("...: %w", r)) keeps the wrapper's text as its Error.
type Report struct {
	Title   string    // "MCP Server Launch Failed"
	Server  string    // the server's name in the config
	Source  Source    // where the server (or the failing setting) was defined
	Command []string  // the stdio command
	URL     string    // the HTTP endpoint
	Problem string    // what went wrong, in one sentence
	Details []Section // evidence, such as the tail of a server's stderr
	Causes  []string  // numbered when more than one
	Fix     []string  // bullets; lines after the first are indented under it

	// CausesHeading replaces "Likely cause(s)"; FixHeading replaces
	// "Troubleshooting".
	CausesHeading string
	FixHeading    string

	Cause error // the underlying error

	from    error // the error that held the report the fields came from
	wrapped bool  // from is not that report itself
}

// Section is a titled block of evidence in a Report.
type Section struct {
	Heading string
	Lines   []string
}

// ReportJSON is a report in fields, as `nexus --output json` prints it.
type ReportJSON struct {
	Kind    string              `json:"kind"` // the report's title: "MCP Server Crashed", ...
	Server  string              `json:"server,omitempty"`
	Source  string              `json:"source,omitempty"` // the config file and line
	Command []string            `json:"command,omitempty"`
	URL     string              `json:"url,omitempty"`
	Message string              `json:"message"`
	Details map[string][]string `json:"details,omitempty"` // evidence by heading
	Causes  []string            `json:"causes,omitempty"`
	Fix     []string            `json:"fix,omitempty"`
	Cause   string              `json:"cause,omitempty"` // the underlying error, where it says more than message
}

// report is d as host shows it, held by from (d itself when from is nil).
func report(d *diag.Report, from error) *Report {
	if d == nil {
		return nil
	}
	wrapped := from != nil && from != error(d)
	if from == nil {
		from = d
	}
	return &Report{Title: d.Title, Server: d.Server, Source: Source(d.Source), Command: d.Command, URL: d.URL,
		Problem: d.Problem, Details: conv(d.Details, func(s diag.Section) Section { return Section(s) }),
		Causes: d.Causes, Fix: d.Fix, CausesHeading: d.CausesHeading, FixHeading: d.FixHeading, Cause: d.Cause,
		from: from, wrapped: wrapped}
}

// diag is the internal report r renders through, built from its fields.
func (r *Report) diag() *diag.Report {
	return &diag.Report{Title: r.Title, Server: r.Server, Source: diag.Source(r.Source), Command: r.Command, URL: r.URL,
		Problem: r.Problem, Details: conv(r.Details, func(s Section) diag.Section { return diag.Section(s) }),
		Causes: r.Causes, Fix: r.Fix, CausesHeading: r.CausesHeading, FixHeading: r.FixHeading, Cause: r.Cause}
}

// Error renders the report in full, sanitized, as the nexus command
// prints it.
func (r *Report) Error() string {
	if r.wrapped {
		return r.from.Error()
	}
	return r.diag().Error()
}

// Unwrap returns the error that held the report, or the report built
// from r's fields, which Unwraps to Cause.
func (r *Report) Unwrap() error { return or(r.from, r.diag()) }

// Brief is the report in a few lines: the server, the problem, the
// evidence, the first fix (what a gateway's client is told).
func (r *Report) Brief() string { return r.diag().Brief() }

// Headline is the title and the problem on one line.
func (r *Report) Headline() string { return r.diag().Headline() }

// JSON is the report in fields.
func (r *Report) JSON() ReportJSON { return ReportJSON(r.diag().JSON()) }

// Render prints err for a person: a Report anywhere in err's chain in
// full, anything else as "Error: " and its message, all of it sanitized.
// A Report wrapped by fmt.Errorf("...: %w", r) is printed alone.
func Render(w io.Writer, err error) {
	var r *Report
	if errors.As(err, &r) && r != nil {
		err = r.diag()
	}
	diag.Render(w, err)
}

// MaskCommand is a command line as it may be shown: the credentials in
// its arguments (a token flag's value, a URL's password) masked. cmd is
// not changed.
func MaskCommand(cmd []string) []string { return diag.MaskCommand(cmd) }

// MaskURLs masks the credentials of every URL in s: a password, a user
// name standing alone (usually a token) and credential-like query
// parameters.
func MaskURLs(s string) string { return diag.MaskURLs(s) }

// reports lists ds as host shows them.
func reports(ds []*diag.Report) []*Report {
	return conv(ds, func(d *diag.Report) *Report { return report(d, nil) })
}

// Source is where a setting came from: the config file, its layer and
// line. It is a Report's Source too.
type Source struct {
	File   string // path of the config file; "" for flags and built-ins
	Layer  string // "global", "project", "local", "flag", "embedded", ...
	Line   int    // 1-based; 0 if unknown
	Column int    // 1-based; 0 if unknown, ignored without Line
}

// String renders s as in "~/.nexus/mcp.json (global config), line 4";
// a zero Source renders as "".
func (s Source) String() string { return diag.Source(s).String() }

// HCL says whether the file is nexus.hcl syntax (a .hcl file).
func (s Source) HCL() bool { return diag.Source(s).HCL() }

func source(s diag.Source) Source { return Source(s) }
