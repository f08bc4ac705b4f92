package config

import (
	"strings"
	"testing"
)

// link_spans is read from both formats, defaults to false (links are
// events on the request's span), and a value that is not a boolean is an
// error at its line.
func TestTelemetryLinkSpans(t *testing.T) {
	hcl := mustLoad(t, "nexus.hcl", "telemetry {\n  endpoint = \"http://127.0.0.1:4318\"\n  link_spans = true\n}\n", nil)
	json := mustLoad(t, "nexus.json", `{"mcpServers": {}, "telemetry": {"endpoint": "http://127.0.0.1:4318", "link_spans": true}}`, nil)
	off := mustLoad(t, "nexus.hcl", "telemetry {\n  endpoint = \"http://127.0.0.1:4318\"\n}\n", nil)
	if !hcl.Telemetry.LinkSpans || !json.Telemetry.LinkSpans || off.Telemetry.LinkSpans {
		t.Errorf("link_spans: hcl %v json %v default %v", hcl.Telemetry.LinkSpans, json.Telemetry.LinkSpans, off.Telemetry.LinkSpans)
	}
	for name, content := range map[string]string{
		"nexus.hcl":  "telemetry {\n  link_spans = \"yes\"\n}\n",
		"nexus.json": `{"mcpServers": {}, "telemetry": {"link_spans": "yes"}}`,
	} {
		_, err := loadOne(t, name, content, nil)
		if err == nil || !strings.Contains(errText(err), `"link_spans" must be`) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
