package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// A telemetry block sends the CLI's traces to an OTLP receiver: the call's
// span and one per link, all in one trace, sent before nexus exits.
func TestTracesFromCLI(t *testing.T) {
	var mu sync.Mutex
	var names []string
	traces := map[string]bool{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("not OTLP: %v", err)
		}
		mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
					traces[string(s.TraceId)] = true
				}
			}
		}
		mu.Unlock()
		b, _ = proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
	}))
	defer recv.Close()
	dir := t.TempDir()
	cfg := cliTestConfig(`
agent "cli" {
  permission = "yolo"
}

telemetry {
  endpoint = "` + recv.URL + `"
}
`)
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code := nexusIn(t, dir, "", nil, "call", "testserver.echo", "message=hi"); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Strings(names)
	if got := strings.Join(names, ", "); got != "nexus.link permission, nexus.link schema, nexus.link upstream, tools/call echo" || len(traces) != 1 {
		t.Errorf("spans %s in %d traces", got, len(traces))
	}
}
