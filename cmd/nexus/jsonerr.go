package main

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
)

// jsonError is one error as --output json prints it: the report a person
// reads, in fields.
type jsonError struct {
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

// printJSONErrors writes err as {"exitCode": N, "errors": [...]}: with
// --output json a failure is as machine-readable as a success.
func printJSONErrors(w io.Writer, err error, code int) {
	var out []jsonError
	for _, r := range config.Reports(err) {
		out = append(out, reportJSON(r))
	}
	if len(out) == 0 {
		out = append(out, jsonError{Kind: "Error", Message: err.Error()})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		ExitCode int         `json:"exitCode"`
		Errors   []jsonError `json:"errors"`
	}{code, out})
}

func reportJSON(r *diag.Report) jsonError {
	e := jsonError{Kind: r.Title, Server: r.Server, Command: r.Command, URL: r.URL, Message: r.Problem, Causes: r.Causes, Fix: r.Fix}
	if e.Kind == "" {
		e.Kind = "Error"
	}
	if r.Source.File != "" || r.Source.Layer != "" {
		e.Source = clean(r.Source.String())
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
		var inner *diag.Report
		if c := r.Cause.Error(); c != r.Problem && !errors.As(r.Cause, &inner) {
			e.Cause = c
		}
	}
	if e.Message == "" && r.Cause != nil {
		e.Message = r.Cause.Error()
	}
	return e
}
