package explain

import (
	"errors"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Record keeps in rec, the audit record of a call that ended in err, the
// report Describe makes of err with the record's agent and server: the
// one the command line prints and the gateway's client reads in brief,
// masked and bounded as the log keeps it (audit.Record.SetReport). A call
// allowed (one that waits for its agent's input, say), or an error with
// no report (a cancelled call), leaves rec as it is. The host calls it
// once it has decided the record (decide), before the log and the
// decision feed get it.
func Record(cfg *config.Config, rec *audit.Record, err error) {
	if err == nil || rec.Decision == event.Allow {
		return
	}
	var rep *diag.Report
	if errors.As(Describe(cfg, err, Options{Agent: rec.Agent, Server: rec.Server}), &rep) {
		rec.SetReport(rep)
	}
}
