package engine

import (
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
)

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
	h.opts.Feed.Publish(audit.Decision{Record: rec})
	return nil
}
