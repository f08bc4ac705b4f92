package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// stepTimes are what differs between runs of nexus explain; a time is
// right-aligned in its column, so the spaces before it go with it (a step
// that took 10 ms or more is a character wider).
var (
	stepTimes = regexp.MustCompile(` *[0-9]+\.[0-9]{3} ms`)
	stepUs    = regexp.MustCompile(`"us": [0-9.e+-]+`)
)

// TestExplain: nexus explain runs the chain without making the call: each
// check with its verdict, reason and source, a shadow filter's would-deny,
// a refusal (exit 4), the sanitizers on a sample result, -o json.
func TestExplain(t *testing.T) {
	deny, denySum := buildFilter(t, "deny-destructive")
	redact, redactSum := buildFilter(t, "redact-secrets")
	dir := t.TempDir()
	cfg := `server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

filter "no-destructive" {
  kind   = "policy"
  wasm   = "` + deny + `"
  sha256 = "` + denySum + `"
  config = { tools = ["testserver.fail"] }
}

filter "new-rule" {
  kind   = "policy"
  wasm   = "` + deny + `"
  sha256 = "` + denySum + `"
  mode   = "shadow"
  config = { tools = ["testserver.echo"] }
}

filter "redact" {
  kind   = "sanitizer"
  wasm   = "` + redact + `"
  sha256 = "` + redactSum + `"
}
`
	for name, body := range map[string]string{
		"nexus.hcl":   cfg,
		"result.json": `{"content": [{"type": "text", "text": "key AKIAIOSFODNN7EXAMPLE"}]}`,
		"bad.json":    `{"content": `,
		"read.json":   `{"contents": [{"uri": "test://static/hello", "text": "password=hunter22"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	explainCases(t, dir, []explainCase{
		{"explain_shadow", []string{"explain", "testserver.echo", "message=hi"}, 0},
		{"explain_denied", []string{"explain", "testserver.fail"}, 4},
		{"explain_schema", []string{"explain", "testserver.add", "a=x", "b=2"}, 4},
		{"explain_result", []string{"explain", "testserver.echo", "message=hi", "--result", "result.json"}, 0},
		{"explain_json", []string{"-o", "json", "explain", "testserver.fail"}, 4},
		{"explain_unknown", []string{"explain", "testserver.nope"}, 2},
		{"explain_bad_result", []string{"explain", "testserver.echo", "--result", "bad.json"}, 2},
		{"explain_method", []string{"explain", "testserver.echo", "--method", "completion/complete"}, 2},
		{"explain_read", []string{"explain", "--method", "resources/read", "testserver", "test://static/hello", "--result", "read.json"}, 0},
		{"explain_prompt", []string{"explain", "--method", "prompts/get", "testserver.greeting", "name=Ann"}, 0},
		{"explain_read_usage", []string{"explain", "--method", "resources/read", "testserver"}, 2},
	})
}

// TestExplainOneChain: a CEL rule, a Rego policy, a Go SDK filter and a
// sanitizer rule in one chain, in config order, each shown with its
// decision and where it is written.
func TestExplainOneChain(t *testing.T) {
	deny, denySum := buildFilter(t, "deny-destructive")
	bundle := filtertest.BuildRego(t, `package p

import rego.v1

deny contains sprintf("server %s is not allowed", [input.server.name]) if not input.server.name in data.servers
`, "p/deny")
	dir := t.TempDir()
	cfg := `server "testserver" {
  stdio {
    command = "nexus"
    args    = ["testserver"]
  }
}

rule "short-messages" {
  when   = "has(args.message) && size(args.message) > 10"
  action = "deny"
  reason = "messages are 10 characters at most"
}

filter "servers" {
  kind       = "policy"
  wasm       = "` + bundle + `"
  entrypoint = "p/deny"
  config     = { servers = ["testserver"] }
}

filter "no-destructive" {
  kind   = "policy"
  wasm   = "` + deny + `"
  sha256 = "` + denySum + `"
  config = { tools = ["testserver.fail"] }
}

rule "mark" {
  kind   = "sanitizer"
  when   = "true"
  action = "modify"
  set    = { "structuredContent" = "{'checked': true}" }
}
`
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "result.json"), []byte(`{"content": [{"type": "text", "text": "hi"}]}`), 0o600)
	explainCases(t, dir, []explainCase{
		{"explain_chain_allowed", []string{"explain", "testserver.echo", "message=hi", "--result", "result.json"}, 0},
		{"explain_chain_rule", []string{"explain", "testserver.echo", "message=far too long a message"}, 4},
		{"explain_chain_wasm", []string{"explain", "testserver.fail", "message=x"}, 4},
	})
}

type explainCase struct {
	name string
	args []string
	code int
}

// explainCases runs nexus explain in dir for each case and pins what it
// prints, the times masked.
func explainCases(t *testing.T, dir string, cases []explainCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := nexusIn(t, dir, "", nil, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			out := stepUs.ReplaceAllString(stepTimes.ReplaceAllString(stdout, " $$TIME"), `"us": $$US`)
			golden(t, c.name, "--- stdout\n"+out+"--- stderr\n"+stderr)
		})
	}
}

// The files flags name are read up to their limit, pipes and standard
// input included, and a larger one is refused with the flag, path and
// limit (filter test's --config had no limit).
func TestReadFlagFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	os.WriteFile(path, []byte(`{"a": 1}`), 0o600)
	if b, err := readFlagFile("--config", path, 8, nil); err != nil || string(b) != `{"a": 1}` {
		t.Fatalf("at the limit: %q %v", b, err)
	}
	if _, err := readFlagFile("--config", path, 7, nil); err == nil || err.Error() != "--config "+path+" is over the 7 bytes limit" {
		t.Fatalf("over the limit: %v", err)
	}
	if b, err := readFlagFile("--event", "-", 4, strings.NewReader("abcd")); err != nil || string(b) != "abcd" {
		t.Fatalf("stdin: %q %v", b, err)
	}
	if _, err := readFlagFile("--event", "-", 4, strings.NewReader("abcde")); err == nil {
		t.Fatal("stdin over the limit was read")
	}
}
