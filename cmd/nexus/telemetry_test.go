package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// A telemetry block sends the CLI's traces to an OTLP receiver, before
// nexus exits: the call's one span with an event per link, or with
// link_spans = true the call's span and one per link, all in one trace.
func TestTracesFromCLI(t *testing.T) {
	for _, linkSpans := range []bool{false, true} {
		tracesFromCLI(t, linkSpans)
	}
}

func tracesFromCLI(t *testing.T, linkSpans bool) {
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
					for _, e := range s.Events {
						names = append(names, "event "+e.Name)
					}
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
  endpoint   = "` + recv.URL + `"
  link_spans = ` + strconv.FormatBool(linkSpans) + `
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
	want := "event nexus.link permission, event nexus.link schema, event nexus.link upstream, tools/call echo"
	if linkSpans {
		want = "nexus.link permission, nexus.link schema, nexus.link upstream, tools/call echo"
	}
	if got := strings.Join(names, ", "); got != want || len(traces) != 1 {
		t.Errorf("link_spans = %v: spans %s in %d traces", linkSpans, got, len(traces))
	}
}
