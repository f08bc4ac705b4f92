package engine

import (
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// Feed is the feed h hands its decisions to, as the audit log gets them,
// while it has subscribers: what a console watches. A host and its
// sessions share one.
func (h *Host) Feed() *audit.Feed { return h.feed }

// Telemetry is Options.Telemetry: the gateway counts its sessions in its
// metrics.
func (h *Host) Telemetry() *telemetry.Telemetry { return h.opts.Telemetry }

// RecordAction writes a record of something a person did outside the
// chain (the console's: a session ended, a lockfile change accepted; Agent
// names who, Reason why) to the audit log, and hands it to the feed's
// watchers. Without an audit log it is the feed's alone; with fail_closed,
// an action that cannot be recorded is refused (the error says so) and
// the caller must not take it.
func (h *Host) RecordAction(rec audit.Record) error {
	if rec.Time.IsZero() {
		rec.Time = time.Now().UTC()
	}
	w, err := h.auditLog()
	switch {
	case w == nil && err != nil && h.failClosed():
		return &AuditError{err}
	case w != nil:
		if err := w.Write(rec); err != nil {
			return &AuditError{err}
		}
	}
	h.feed.Publish(audit.Decision{Record: rec})
	return nil
}
