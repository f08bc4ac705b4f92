package config

import (
	"strings"
	"testing"
	"time"
)

// A server's start and the gateway's list_wait (issue 42 part 2) load
// from HCL and JSON, survive nexus-json, and compile to mcpServers
// without them, with a warning.
func TestStartAndListWait(t *testing.T) {
	hcl := mustLoad(t, "nexus.hcl", "gateway {\n  list_wait = \"250ms\"\n  cache_ttl = \"30s\"\n  input_ttl = \"90s\"\n}\nserver \"a\" {\n  start = \"lazy\"\n  stdio { command = \"x\" }\n}\nserver \"b\" {\n  stdio { command = \"y\" }\n}\n", nil)
	if hcl.Server("a").Start != StartLazy || hcl.Server("b").Start != "" || hcl.Gateway.ListWait != 250*time.Millisecond {
		t.Fatalf("hcl: start %q %q, list_wait %v", hcl.Server("a").Start, hcl.Server("b").Start, hcl.Gateway.ListWait)
	}
	out, _, err := Compile(hcl, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"start": "lazy"`) || !strings.Contains(string(out), `"cache_ttl": "30s"`) || !strings.Contains(string(out), `"input_ttl": "1m30s"`) {
		t.Fatalf("nexus-json has no start:\n%s", out)
	}
	back := mustLoad(t, "nexus.json", string(out), nil)
	if back.Server("a").Start != StartLazy || back.Gateway.CacheTTL != 30*time.Second || back.Gateway.InputTTL != 90*time.Second {
		t.Fatalf("nexus-json did not load start back: %q\n%s", back.Server("a").Start, out)
	}
	js := mustLoad(t, "nexus.json", `{"gateway": {"list_wait": "2s", "cache_ttl": "5m", "input_ttl": "10m"}, "mcpServers": {"a": {"command": "x", "start": "eager"}}}`, nil)
	if js.Server("a").Start != StartEager || js.Gateway.ListWait != 2*time.Second || js.Gateway.CacheTTL != 5*time.Minute || js.Gateway.InputTTL != 10*time.Minute {
		t.Fatalf("json: start %q, list_wait %v", js.Server("a").Start, js.Gateway.ListWait)
	}
	out, warns, err := Compile(hcl, FormatMCPServers)
	if err != nil {
		t.Fatal(err)
	}
	var said bool
	for _, w := range warns {
		said = said || strings.Contains(w.Message, `start "lazy" cannot be expressed`)
	}
	if strings.Contains(string(out), "start") || !said {
		t.Fatalf("mcpServers kept start or did not warn: %v\n%s", warns, out)
	}
	if _, err := loadOne(t, "nexus.json", `{"mcpServers": {"a": {"command": "x", "start": "soon"}}}`, nil); err == nil || !strings.Contains(errText(err), `start "soon" is not one of`) {
		t.Fatalf("a bad start in JSON: %v", err)
	}
}
