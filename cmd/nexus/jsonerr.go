package main

import (
	"encoding/json"
	"io"

	"github.com/nexus-mcp/nexus/host"
)

// printJSONErrors writes err as {"exitCode": N, "errors": [...]}: with
// --output json a failure is as machine-readable as a success.
func printJSONErrors(w io.Writer, err error, code int) {
	var out []host.ReportJSON
	for _, r := range host.Reports(err) {
		out = append(out, r.JSON())
	}
	if len(out) == 0 {
		out = append(out, host.ReportJSON{Kind: "Error", Message: err.Error()})
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(struct {
		ExitCode int               `json:"exitCode"`
		Errors   []host.ReportJSON `json:"errors"`
	}{code, out})
}
