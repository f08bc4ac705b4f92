package diag

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// A Report is built once and rendered for each reader: Error for a
// person at a terminal (the CLI), JSON for a program (--output json),
// Brief for the gateway's client (a JSON-RPC error's message, a refused
// call's tool result), Headline for a line in a list (the console). Every
// renderer reads the same fields, so the readers are told the same thing.

// Brief is the report in a few lines: the server, the problem, the
// evidence (a stderr tail, a refusal's reason), the first fix.
func (r *Report) Brief() string {
	var b strings.Builder
	if r.Server != "" {
		fmt.Fprintf(&b, "server %q: ", r.Server)
	}
	b.WriteString(r.Problem)
	for _, d := range r.Details {
		if len(d.Lines) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s:", d.Heading)
		for _, l := range d.Lines {
			b.WriteString("\n  " + l)
		}
	}
	if len(r.Fix) > 0 {
		b.WriteString("\nFix: " + r.Fix[0])
	}
	return b.String()
}

// Headline is the title and the problem on one line.
func (r *Report) Headline() string {
	if r.Title == "" {
		return r.Problem
	}
	return r.Title + ": " + r.Problem
}

// JSON is a report in fields, as --output json prints it.
type JSON struct {
	Kind    string              `json:"kind"` // the report's title: "MCP Server Crashed", "Invalid Tool Arguments", ...
	Server  string              `json:"server,omitempty"`
	Source  string              `json:"source,omitempty"` // the config file and line the server (or setting) came from
	Command []string            `json:"command,omitempty"`
	URL     string              `json:"url,omitempty"`
	Message string              `json:"message"`
	Details map[string][]string `json:"details,omitempty"` // evidence by heading: the server's stderr, schema problems
	Causes  []string            `json:"causes,omitempty"`
	Fix     []string            `json:"fix,omitempty"`
	Cause   string              `json:"cause,omitempty"` // the underlying error, where it says more than message
}

// JSON is the report in fields.
func (r *Report) JSON() JSON {
	e := JSON{Kind: r.Title, Server: r.Server, Command: r.Command, URL: r.URL, Message: r.Problem, Causes: r.Causes, Fix: r.Fix}
	if e.Kind == "" {
		e.Kind = "Error"
	}
	if r.Source.File != "" || r.Source.Layer != "" {
		e.Source = sanitize.ForDisplay(r.Source.String())
	}
	for _, d := range r.Details {
		if e.Details == nil {
			e.Details = map[string][]string{}
		}
		h := d.Heading
		if h == "" {
			h = "excerpt" // the config lines with a caret under the spot
		}
		e.Details[h] = append(e.Details[h], d.Lines...)
	}
	if r.Cause != nil {
		var inner *Report
		if c := r.Cause.Error(); c != r.Problem && !errors.As(r.Cause, &inner) {
			e.Cause = c
		}
	}
	if e.Message == "" && r.Cause != nil {
		e.Message = r.Cause.Error()
	}
	return e
}

// Headline is the kind and the message on one line, as Report.Headline.
func (j JSON) Headline() string {
	if j.Kind == "" {
		return j.Message
	}
	return j.Kind + ": " + j.Message
}

// Masked is j with the masking the command line applies to what it
// prints (Report.Error): the credentials of URLs in every text and of the
// command's arguments masked, and nothing a terminal would act on. What
// keeps a report (the audit log) keeps this.
func (j JSON) Masked() JSON {
	m := j
	for _, s := range []*string{&m.Kind, &m.Server, &m.Source, &m.URL, &m.Message, &m.Cause} {
		*s = clean(*s)
	}
	if j.Command != nil {
		m.Command = MaskCommand(j.Command)
		for i, a := range m.Command {
			m.Command[i] = sanitize.ForDisplay(a)
		}
	}
	list := func(l []string) []string {
		if l == nil {
			return nil
		}
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = clean(s)
		}
		return out
	}
	m.Causes, m.Fix = list(j.Causes), list(j.Fix)
	if j.Details != nil {
		m.Details = make(map[string][]string, len(j.Details))
		for h, l := range j.Details {
			m.Details[clean(h)] = list(l)
		}
	}
	return m
}
