package telemetry_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/telemetry"
)

// Metrics on, traces off (no OTLP endpoint configured): a request is
// counted, and its span records nothing.
func ExampleNew() {
	t, err := telemetry.New(context.Background(), telemetry.Options{Metrics: true, Getenv: func(string) string { return "" }})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, span := t.Start(context.Background(), "tools/call", nil)
	t.Metrics().Request("tools/call", "github", "get_issue", "allow", []telemetry.Step{{Link: "permission", Action: "allow", Duration: 4 * time.Microsecond}})
	telemetry.End(span, telemetry.Request{Method: "tools/call", Tool: "get_issue", Decision: "allow", Server: "github"}, nil)

	rec := httptest.NewRecorder()
	t.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "nexus_requests_total{") {
			fmt.Println(line)
		}
	}
	fmt.Println("tracing:", t.Tracing(), "recording:", span.IsRecording())
	// Output:
	// nexus_requests_total{decision="allow",method="tools/call",server="github",tool="get_issue"} 1
	// tracing: false recording: false
}
