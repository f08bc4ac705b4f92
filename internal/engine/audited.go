package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-mcp/nexus/internal/registry"
	"strconv"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/ctxval"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/telemetry"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter/redact"
)

// The audit log (the audit block, or Options.Audit): one record per
// decision point, each with the steps of the chain that led to it. The
// log is opened on first use; with fail_closed, a call is refused while
// it cannot be written, rather than made unrecorded.

// auditLog returns the log, opening the audit block's on first use; nil
// when there is none.
func (c *core) auditLog() (*audit.Writer, error) {
	if c.opts.Audit != nil {
		c.auditOnce.Do(func() { c.opts.Telemetry.Metrics().AuditDropped(c.opts.Audit.Dropped) })
		return c.opts.Audit, nil
	}
	a := c.cfg.Audit
	if a == nil {
		return nil, nil
	}
	c.auditOnce.Do(func() {
		keys, err := audit.ConfigKeys(a)
		if err != nil {
			c.auditErr = fmt.Errorf("audit log %s: %w", a.Path, err)
		} else {
			c.auditW, c.auditErr = audit.Open(audit.Options{Path: a.Path, MaxBytes: int64(a.MaxBytes), Keep: a.Keep, Buffer: a.Buffer,
				FailClosed: a.FailClosed, Logger: c.log.Named("audit"), Keys: keys, CheckpointPath: a.CheckpointPath, CheckpointEvery: a.CheckpointEvery})
		}
		if c.auditErr != nil {
			c.log.Error("the audit log cannot be opened", "path", a.Path, "error", c.auditErr)
			return
		}
		c.opts.Telemetry.Metrics().AuditDropped(c.auditW.Dropped)
	})
	return c.auditW, c.auditErr
}

// OpenAudit opens the audit block's log now rather than at the first
// request, so a server (nexus serve) learns at start that it cannot be
// written; nil without an audit block.
func (h *Host) OpenAudit() error {
	_, err := h.auditLog()
	if err != nil {
		return fmt.Errorf("the audit log cannot be opened: %w", err)
	}
	return nil
}

// failClosed says whether calls must stop when the log cannot be written.
func (c *core) failClosed() bool {
	return c.opts.Audit == nil && c.cfg.Audit != nil && c.cfg.Audit.FailClosed
}

// AuditError is a call refused because the audit log, with fail_closed,
// cannot record it.
type AuditError struct{ Err error }

func (e *AuditError) Error() string {
	return fmt.Sprintf("refused: the audit log cannot record this call, and the audit block says fail_closed = true: %v (fix the log's disk or path, or set fail_closed = false to go on unrecorded)", e.Err)
}

func (e *AuditError) Unwrap() error { return e.Err }

// auditing says whether an audit log keeps records: only then are a
// request's arguments encoded and hashed for its record.
func (h *Host) auditing() bool {
	w, _ := h.auditLog()
	return w != nil
}

// observing says whether anything watches decision points: the audit
// log (or its failure, fail-closed), traces, metrics. When nothing does,
// a request takes no trace and pays nothing for them.
func (h *Host) observing() bool {
	if w, _ := h.auditLog(); w != nil || h.failClosed() {
		return true
	}
	t := h.opts.Telemetry
	return t.Tracing() || t.Metrics() != nil || h.feed.Active()
}

// audited runs do as one decision point under a trace, then reports it:
// rec as do filled it in, with the decision and steps the trace shows, to
// the audit log, as a span (each link an event on it, or a child span
// with link_spans), and to the metrics.
func (h *Host) audited(ctx context.Context, rec *audit.Record, do func(ctx context.Context) error) error {
	w, err := h.auditLog()
	if w == nil && err != nil && h.failClosed() {
		return &AuditError{err}
	}
	// Fail-closed, the call runs only once its record has a place in the
	// log's queue: a full queue or a failing disk refuses it before it
	// runs, not after.
	reserved := false
	if w != nil && w.FailClosed() {
		if err := w.Reserve(); err != nil {
			return &AuditError{err}
		}
		reserved = true
		defer func() {
			if reserved { // do panicked: the place goes back
				w.Release()
			}
		}()
	}
	tr := policy.TraceFrom(ctx)
	if tr == nil {
		tr = policy.NewTrace()
		defer tr.Release() // after the steps below are read
		ctx = policy.WithTrace(ctx, tr)
	}
	before := tr.Len()
	rec.Time = time.Now().UTC()
	rec.Session = h.hooks.session
	if id, ok := SessionFrom(ctx); ok {
		rec.Session = id
	}
	if rec.Call == "" {
		rec.Call = CallIDFrom(ctx)
	}
	tel := h.opts.Telemetry
	meta := TraceContextFrom(ctx)
	ctx, sp := tel.Start(ctx, rec.Method, meta)
	err = do(ctxval.With(ctx, recordKey{}, rec))
	steps := tr.Since(before)
	feed := h.feed
	watched := feed.Active()
	decide(rec, steps, err, w != nil || watched)
	if w != nil || watched {
		// A refused or failed call's record carries the report the
		// command line and the gateway's client read, masked and bounded.
		explain.Record(h.cfg, rec, err)
	}
	counted := !decidedBefore(ctx, rec)
	if tel != nil && counted {
		var buf [8]telemetry.Step // a request's usual few, on the stack
		ts := buf[:0]
		for _, s := range steps {
			ts = append(ts, telemetry.Step{Link: s.Link, Source: s.Source, Action: s.Action, Method: s.Method, Start: s.Start, Duration: s.Duration})
		}
		tel.Steps(ctx, ts)
		tel.Metrics().Request(rec.Method, rec.Server, rec.Tool, rec.Decision, ts)
	}
	if sp.IsRecording() {
		telemetry.End(sp, spanOf(ctx, rec, err), err)
	}
	if watched {
		// The record as the log gets it: the feed's watchers see what
		// the log shows, and no more.
		feed.Publish(audit.Decision{Record: *rec, Latency: time.Since(rec.Time)})
	}
	if w != nil {
		var werr error
		if reserved {
			// Fail-closed, the answer waits until its record is in the
			// file: a crash right after the answer cannot lose it.
			reserved, werr = false, w.Commit(ctx, *rec)
		} else {
			werr = w.Write(*rec)
		}
		if werr != nil {
			return &AuditError{werr}
		}
	}
	return err
}

// decidedBefore says whether rec is a retry of a modern agent's call
// decided on its first attempt (Attempt) that what still runs on
// it (the lockfile, the schemas, the sanitizers, the server) let pass:
// not a decision of its own, so no metrics count it. Every retry is
// still recorded, flagged "retry" under its first attempt's call id: a
// requestState may be replayed until it expires, and each replay runs
// the upstream again, so none may go unaudited.
func decidedBefore(ctx context.Context, rec *audit.Record) bool {
	if !Retried(ctx) {
		return false
	}
	switch rec.Method {
	case mcp.MethodToolsCall, mcp.MethodResourcesRead, mcp.MethodPromptsGet:
	default:
		return false
	}
	rec.Flags = append(rec.Flags, "retry")
	return rec.Decision == event.Allow
}

// spanOf is what a request's span says: the record, and what the
// semantic conventions for MCP ask of the request served (its version,
// transport and JSON-RPC id, when ctx is a served request's) and of a
// failure.
func spanOf(ctx context.Context, rec *audit.Record, err error) telemetry.Request {
	r := telemetry.Request{Method: rec.Method, Tool: rec.Tool, Prompt: rec.Prompt, URI: rec.URI, Session: rec.Session, Decision: rec.Decision, Server: rec.Server}
	if s := ServedFrom(ctx); s != nil {
		r.ProtocolVersion, r.Transport = s.Version, s.Transport
	}
	if m, ok := mcp.RequestMetaOf(ctx); ok {
		r.ProtocolVersion = m.ProtocolVersion
	}
	if id := mcp.RelatedRequest(ctx); len(id) > 0 {
		r.RequestID = string(id)
	}
	r.ErrorType = errorType(rec, err)
	return r
}

// inputRequired says whether err is a modern upstream's interim answer
// (Multi Round-Trip Requests): the request was let through, and the
// agent is asked for input before it goes on, in its retry.
func inputRequired(err error) bool {
	var ir *mcp.InputRequiredError
	return errors.As(err, &ir)
}

// errorType is error.type for a request that failed: low-cardinality, as
// the conventions ask (a JSON-RPC code, "tool_error" for a tool's result
// with isError), "" for a success.
func errorType(rec *audit.Record, err error) string {
	var re *mcp.RPCError
	var de *policy.DeniedError
	var ae *AuditError
	switch {
	case err == nil || inputRequired(err):
		if rec.IsError != nil && *rec.IsError {
			return "tool_error"
		}
		return ""
	case errors.As(err, &re):
		return strconv.Itoa(re.Code)
	case errors.As(err, &de):
		return "denied"
	case errors.As(err, &ae):
		return "audit"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "_OTHER"
}

// upstreamMeta is the _meta that carries ctx's trace context upstream
// (traceparent, and tracestate and baggage when the trace has them), or
// nil without tracing.
func (h *Host) upstreamMeta(ctx context.Context) mcp.Meta {
	t := h.opts.Telemetry
	tp := t.Traceparent(ctx)
	if tp == nil {
		return nil
	}
	m := mcp.Meta{"traceparent": tp}
	if ts := t.Tracestate(ctx); ts != "" {
		m["tracestate"], _ = json.Marshal(ts)
	}
	if b := t.Baggage(ctx); b != "" {
		m["baggage"], _ = json.Marshal(b)
	}
	return m
}

type recordKey struct{}

// auditRecordFrom is the record a decision point being audited fills in,
// or nil.
func auditRecordFrom(ctx context.Context) *audit.Record {
	r, _ := ctx.Value(recordKey{}).(*audit.Record)
	return r
}

// fillTarget takes the server and tool of a refusal into a record that
// does not have them yet (a call refused before its tool was found).
func fillTarget(rec *audit.Record, err error) {
	var de *policy.DeniedError
	if errors.As(err, &de) && de.Server != "" {
		rec.Server, rec.Tool = de.Server, de.Tool
	}
}

// decide fills in a record's decision and the link that made it, and with
// withSteps the steps (for the audit log), from what the chain did and how
// the request ended.
func decide(rec *audit.Record, steps []policy.Step, err error, withSteps bool) {
	rec.Decision = event.Allow
	if withSteps {
		rec.Steps = make([]audit.Step, 0, len(steps))
	}
	for _, s := range steps {
		if withSteps {
			rec.Steps = append(rec.Steps, audit.Step{Link: s.Link, Source: s.Source, Action: s.Action, Micros: float64(s.Duration.Nanoseconds()) / 1e3})
		}
		switch s.Action {
		case event.Modify:
			rec.Decision, rec.Link, rec.Source, rec.Reason = event.Modify, s.Link, s.Source, s.Reason
		case policy.ActionWouldDeny, policy.ActionWouldModify:
			if rec.Decision == event.Allow {
				rec.Decision, rec.Link, rec.Source, rec.Reason = s.Action, s.Link, s.Source, s.Reason
			}
		}
	}
	if err == nil {
		return
	}
	if inputRequired(err) {
		// Allowed, and waiting for the agent's input: its retry is the
		// same call (Attempt), not decided again.
		rec.Flags = append(rec.Flags, "input_required")
		return
	}
	var de *policy.DeniedError
	var se *registry.SchemaError
	var we *policy.WithheldError
	switch {
	case errors.As(err, &de):
		rec.Decision, rec.Link, rec.Reason, rec.Flags = event.Deny, de.Link, de.Reason, append(rec.Flags, de.Flags...)
		if de.Err != nil {
			rec.Reason = de.Err.Error()
		}
	case errors.As(err, &se):
		rec.Decision, rec.Link, rec.Reason = event.Deny, "schema", err.Error()
	case errors.As(err, &we):
		rec.Decision, rec.Link, rec.Reason = policy.ActionError, we.Link, err.Error()
	default:
		rec.Decision, rec.Reason = policy.ActionError, err.Error()
		// A refusal told to a server as a JSON-RPC error: the steps say
		// which link it was.
		for i := len(steps) - 1; i >= 0; i-- {
			if steps[i].Action == event.Deny {
				rec.Decision, rec.Link, rec.Reason = event.Deny, steps[i].Link, steps[i].Reason
				break
			}
		}
	}
	rec.Source = ""
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Link == rec.Link {
			rec.Source = steps[i].Source
			break
		}
	}
}

// argsRecord sets a call's argument digest (keyed with the log's key) and
// length, and with include_arguments the arguments themselves, redacted:
// whole when they fit a record, else a redacted preview of their start.
// However big the arguments, the call is recorded.
func (h *Host) argsRecord(rec *audit.Record, raw json.RawMessage) {
	w, _ := h.auditLog()
	if w == nil {
		return
	}
	w.HashArgs(rec, raw)
	if a := h.cfg.Audit; a != nil && a.IncludeArguments {
		rec.Args, rec.ArgsPreview = redactArgs(raw)
	}
}

// argRedactor finds the secrets in recorded arguments: the detectors of
// the redact-secrets filter, and long random tokens too (an audit log can
// afford a false alarm).
var argRedactor = func() *redact.Redactor {
	r := redact.New()
	r.Entropy(true)
	return r
}()

// redactArgs is raw, redacted, when it fits a record; else nil and a
// redacted preview of its start (the Writer cuts it to PreviewBytes).
func redactArgs(raw []byte) (json.RawMessage, string) {
	if len(raw) <= audit.MaxArgs {
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&v) == nil {
			var n redact.Counts
			if b, err := json.Marshal(redactValue("", v, &n)); err == nil && len(b) <= audit.MaxArgs {
				return b, ""
			}
		}
	}
	// Twice the preview is redacted, so that a secret across the cut is
	// seen whole; what is past the cut then is not kept.
	head := raw[:min(len(raw), 2*audit.PreviewBytes)]
	var n redact.Counts
	s, _ := argRedactor.String(diag.MaskURLs(string(head)), &n)
	return nil, s
}

// redactValue redacts an argument value: a value under a secret key
// (nested ones too) whole, and the secrets inside every other string.
func redactValue(key string, v any, n *redact.Counts) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = redactValue(k, e, n)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(key, e, n)
		}
	case string:
		s, _ := argRedactor.Value(key, x, n)
		return diag.MaskURLs(s)
	case json.Number:
		if key != "" && argRedactor.SecretKey(key) {
			n[redact.KindSecret]++
			return redact.Placeholder(redact.KindSecret)
		}
	}
	return v
}

// resultRecord sets what a call's result was: an error or not, and its
// size.
func resultRecord(rec *audit.Record, res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	isErr := res.IsError
	rec.IsError = &isErr
	n := len(res.StructuredContent)
	for _, c := range res.Content {
		n += len(c.Text) + len(c.Data)
	}
	rec.Bytes = n
}
