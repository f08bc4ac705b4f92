package audit

import (
	"encoding/json"
	"slices"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// MaxReport bounds a record's report (its JSON). A report is a few
// hundred bytes; one that quotes a whole stderr or a server's long error
// is cut to fit, and the record says so with the flag "report_truncated".
const MaxReport = 8 << 10

// Limits of a report cut to fit MaxReport: each text, each list, the
// lines under each heading, the headings.
const (
	reportText  = 512
	reportItems = 8
	reportHeads = 4
)

// tooBig stands for a report that came too big, or not as JSON.
var tooBig = json.RawMessage(`{"kind":"Error","message":"the report was too big to keep"}`)

// SetReport keeps rep in the record, as the command line's --output json
// prints it (diag.Report.JSON) with the masking the command line applies
// (diag.JSON.Masked): no credential of a URL or a command line reaches
// the log. Over MaxReport, every part is cut to its limit (a cut text
// ends in "…"; the evidence is dropped first, then all but the kind and
// the message) and the flag "report_truncated" says so; nil removes it.
func (r *Record) SetReport(rep *diag.Report) {
	if rep == nil {
		r.Report = nil
		return
	}
	j := rep.JSON().Masked()
	b, err := json.Marshal(j)
	if err == nil && len(b) <= MaxReport {
		r.Report = b
		return
	}
	s := shrink(j)
	b, err = json.Marshal(s)
	if err != nil || len(b) > MaxReport {
		// The evidence goes first: what happened and the fix stay.
		s.Details, s.Cause = nil, ""
		b, err = json.Marshal(s)
	}
	if err != nil || len(b) > MaxReport {
		// Escaping can grow a text six-fold (a "<" is \u003c): the kind
		// and the message, cut shorter, always fit.
		b, err = json.Marshal(diag.JSON{Kind: cut(j.Kind, reportText/8), Message: cut(j.Message, reportText/8)})
	}
	if err != nil {
		b = tooBig
	}
	r.Report = b
	if !slices.Contains(r.Flags, "report_truncated") {
		r.Flags = append(r.Flags[:len(r.Flags):len(r.Flags)], "report_truncated")
	}
}

// shrink is j with every part cut to the limits above.
func shrink(j diag.JSON) diag.JSON {
	list := func(l []string) []string {
		if len(l) > reportItems {
			l = append(l[:reportItems:reportItems], "…")
		}
		out := make([]string, len(l))
		for i, s := range l {
			out[i] = cut(s, reportText)
		}
		return out
	}
	m := diag.JSON{Kind: cut(j.Kind, reportText), Server: cut(j.Server, reportText), Source: cut(j.Source, reportText),
		URL: cut(j.URL, reportText), Message: cut(j.Message, reportText), Cause: cut(j.Cause, reportText)}
	if len(j.Command) > 0 {
		m.Command = list(j.Command)
	}
	if len(j.Causes) > 0 {
		m.Causes = list(j.Causes)
	}
	if len(j.Fix) > 0 {
		m.Fix = list(j.Fix)
	}
	if len(j.Details) > 0 {
		heads := make([]string, 0, len(j.Details))
		for h := range j.Details {
			heads = append(heads, h)
		}
		slices.Sort(heads)
		m.Details = map[string][]string{}
		for _, h := range heads[:min(len(heads), reportHeads)] {
			m.Details[cut(h, reportText)] = list(j.Details[h])
		}
	}
	return m
}
