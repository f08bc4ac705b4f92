//go:build unix

package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// TestShortSoak runs the soak for a few seconds with every fault, so the
// harness `make soak` relies on keeps working: the replicas start, the
// faults land, the audit logs are matched to the calls, and the checks
// hold. The full run is `make soak` (10 minutes, 10,000 sessions).
func TestShortSoak(t *testing.T) {
	testenv.RedisServer(t) // fails with the fix when redis-server is missing
	o := options{nexus: testenv.Nexus(t), duration: 12 * time.Second, sessions: 400, replicas: 2, flood: 6, faults: true, dir: t.TempDir()}
	rep, err := run(context.Background(), o, io.Discard)
	if rep != nil {
		t.Log("\n" + rep.markdown())
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.faults) < 5 {
		t.Errorf("faults injected: %q, want the upstream, Redis (killed, started) and a replica (killed, started)", rep.faults)
	}
	for _, a := range agents {
		if rep.perAgent[a].ok.Load() == 0 {
			t.Errorf("%s was never answered", a)
		}
	}
	if rep.calls == 0 || rep.records < rep.calls {
		t.Errorf("audit: %d records for %d answered echo calls", rep.records, rep.calls)
	}
	if table := rep.markdown(); !strings.Contains(table, "| bob |") {
		t.Errorf("report table:\n%s", table)
	}
}
