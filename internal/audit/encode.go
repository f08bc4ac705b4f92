package audit

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// appendRecord writes r as one JSON object, the fields in Record's order
// with its omitempty rules, into b: what json.Marshal writes, without its
// reflection and allocations (the writer's goroutine makes one record a
// call). TestAppendRecord holds it to encoding/json.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","agent":`...)
	b = wire.AppendStringHTML(b, r.Agent)
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = wire.AppendStringHTML(b, v)
		}
	}
	str("session", r.Session)
	str("call", r.Call)
	str("server", r.Server)
	b = append(b, `,"method":`...)
	b = wire.AppendStringHTML(b, r.Method)
	str("tool", r.Tool)
	str("uri", r.URI)
	str("prompt", r.Prompt)
	b = append(b, `,"decision":`...)
	b = wire.AppendStringHTML(b, r.Decision)
	str("link", r.Link)
	str("source", r.Source)
	str("reason", r.Reason)
	if len(r.Steps) > 0 {
		b = append(b, `,"steps":[`...)
		for i, s := range r.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"link":`...)
			b = wire.AppendStringHTML(b, s.Link)
			if s.Source != "" {
				b = append(b, `,"source":`...)
				b = wire.AppendStringHTML(b, s.Source)
			}
			b = append(b, `,"action":`...)
			b = wire.AppendStringHTML(b, s.Action)
			b = append(b, `,"us":`...)
			b = strconv.AppendFloat(b, s.Micros, 'f', -1, 64)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	str("args_sha256", r.ArgsSHA256)
	str("args_hmac", r.ArgsHMAC)
	if r.ArgsBytes != 0 {
		b = append(b, `,"args_bytes":`...)
		b = strconv.AppendInt(b, int64(r.ArgsBytes), 10)
	}
	if len(r.Args) > 0 {
		if !json.Valid(r.Args) {
			return nil, errors.New("the record's args are not JSON")
		}
		b = append(b, `,"args":`...)
		b = append(b, r.Args...)
	}
	str("args_preview", r.ArgsPreview)
	if r.IsError != nil {
		b = append(b, `,"is_error":`...)
		b = strconv.AppendBool(b, *r.IsError)
	}
	if r.Bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, int64(r.Bytes), 10)
	}
	if len(r.Flags) > 0 {
		b = append(b, `,"flags":[`...)
		for i, f := range r.Flags {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendStringHTML(b, f)
		}
		b = append(b, ']')
	}
	if len(r.Report) > 0 {
		b = append(b, `,"report":`...)
		b = append(b, r.Report...)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	str("genesis", r.Genesis)
	str("key_id", r.KeyID)
	str("prev", r.Prev)
	str("mac", r.MAC)
	return append(b, '}'), nil
}

// Limits of a record's parts. Within them no record's line can pass
// MaxLine, even with every byte of its text escaped six-fold, so Write
// never has to refuse or drop a record for its size: what is cut is said
// by the flags "record_truncated" or "args_truncated".
const (
	maxText     = 4 << 10  // each string field
	maxStepText = 256      // each string of a step
	maxSteps    = 64       // steps kept
	maxFlags    = 32       // flags kept
	MaxArgs     = 64 << 10 // Args kept whole; bigger ones become ArgsPreview
	// PreviewBytes is how much of arguments too big to keep goes into
	// ArgsPreview.
	PreviewBytes = 1 << 10
)

// clamp shrinks r to the limits above.
func clamp(r *Record) {
	cutAll := false
	for _, s := range []*string{&r.Agent, &r.Session, &r.Call, &r.Server, &r.Method, &r.Tool, &r.URI, &r.Prompt, &r.Decision,
		&r.Link, &r.Source, &r.Reason, &r.ArgsSHA256, &r.ArgsHMAC, &r.ArgsPreview} {
		if len(*s) > maxText {
			*s, cutAll = cut(*s, maxText), true
		}
	}
	if len(r.Steps) > maxSteps {
		r.Steps, cutAll = r.Steps[:maxSteps:maxSteps], true
	}
	copied := false // the caller's slices stay as they were
	for i, s := range r.Steps {
		if len(s.Link) > maxStepText || len(s.Source) > maxStepText || len(s.Action) > maxStepText {
			if !copied {
				r.Steps, copied = append([]Step(nil), r.Steps...), true
			}
			r.Steps[i] = Step{Link: cut(s.Link, maxStepText), Source: cut(s.Source, maxStepText), Action: cut(s.Action, maxStepText), Micros: s.Micros}
			cutAll = true
		}
	}
	if len(r.Flags) > maxFlags {
		r.Flags, cutAll = r.Flags[:maxFlags:maxFlags], true
	}
	copied = false
	for i, f := range r.Flags {
		if len(f) > maxStepText {
			if !copied {
				r.Flags, copied = append([]string(nil), r.Flags...), true
			}
			r.Flags[i], cutAll = cut(f, maxStepText), true
		}
	}
	if len(r.ArgsPreview) > PreviewBytes {
		r.ArgsPreview = cut(r.ArgsPreview, PreviewBytes)
	}
	if len(r.Args) > MaxArgs || len(r.Args) > 0 && !json.Valid(r.Args) {
		r.ArgsPreview = cut(string(r.Args), PreviewBytes)
		r.Args = nil
		r.Flags = append(r.Flags[:len(r.Flags):len(r.Flags)], "args_truncated")
	}
	if r.ArgsPreview != "" && !slices.Contains(r.Flags, "args_truncated") {
		r.Flags = append(r.Flags[:len(r.Flags):len(r.Flags)], "args_truncated")
	}
	if len(r.Report) > MaxReport || len(r.Report) > 0 && !json.Valid(r.Report) {
		// Set by hand rather than by SetReport: what is left is its kind.
		r.Report = tooBig
		r.Flags = append(r.Flags[:len(r.Flags):len(r.Flags)], "report_truncated")
	}
	if cutAll {
		r.Flags = append(r.Flags[:len(r.Flags):len(r.Flags)], "record_truncated")
	}
}

// cut shortens s to at most n bytes, at a character's start, marking the
// cut with "…".
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
