package diag

import (
	"errors"
	"strings"
	"testing"
)

func TestGoldenHTTPAndPolicy(t *testing.T) {
	setHome(t, "/home/alice")
	remote := Context{Server: "remote", Source: globalSource, URL: "https://mcp.example.com/mcp", GOOS: "linux"}
	html := "<!DOCTYPE html>\n<html>\n<head><title>404 Not Found</title></head>\n<body>\n<h1>Not Found</h1>\n" +
		strings.Repeat("<p>padding</p>\n", 20) + "</body></html>"

	tests := []struct {
		name string
		r    *Report
	}{
		{"http_401", HTTPStatus(remote, "POST", "https://mcp.example.com/mcp", 401,
			`{"error":"invalid_token","error_description":"The access token expired"}`, "", errors.New("HTTP 401"))},
		{"http_404_html", HTTPStatus(remote, "POST", "https://mcp.example.com/mcp", 404, html, "", nil)},
		{"http_405", HTTPStatus(remote, "GET", "", 405, "", "", nil)},
		{"http_405_hcl", HTTPStatus(Context{Server: "remote", Source: hclSource, URL: "https://mcp.example.com/mcp", GOOS: "linux"}, "GET", "", 405, "", "", nil)},
		{"http_401_hcl", HTTPStatus(Context{Server: "remote", Source: hclSource, URL: "https://mcp.example.com/mcp", GOOS: "linux"}, "POST", "https://mcp.example.com/mcp", 401, "", "", nil)},
		{"http_429", HTTPStatus(remote, "POST", "https://mcp.example.com/mcp", 429, "slow down", "30", nil)},
		{"http_503", HTTPStatus(remote, "POST", "https://mcp.example.com/mcp", 503, "", "", nil)},
		{"policy_permission", PolicyDenied(
			Context{Server: "testserver", Source: projectSource},
			Denial{Method: "tools/call", Tool: "echo", Link: "permission", Kind: "policy", Agent: "cli",
				Reason: `agent "cli" is trusted, so its first use of server "testserver" needs a person's confirmation, and nobody can be asked here; pass --yes, or set permission = "yolo" for the agent`})},
		{"policy_rules_agent", PolicyDenied(
			Context{Server: "github", Source: globalSource},
			Denial{Method: "tools/call", Tool: "delete_repo", Link: "rules", Kind: "policy", Agent: "reviewer",
				AgentSource: Source{File: "/home/alice/app/nexus.hcl", Layer: "project", Line: 14},
				Reason:      `github.delete_repo is not allowed for agent "reviewer" by its allow/deny rules`})},
		{"policy_filter", PolicyDenied(
			Context{Server: "github", Source: globalSource},
			Denial{Method: "tools/call", Tool: "delete_repo", Link: "no-destructive", LinkKind: LinkWASM, Kind: "policy", Agent: "cli",
				LinkSource: Source{File: "/home/alice/app/nexus.hcl", Layer: "project", Line: 30},
				Reason:     "destructive tools need a ticket number in the arguments"})},
		// Each kind of link gets the fix that fits it: the lockfile's
		// verbs, a rule's expression, a plugin's inspection; nexus filter
		// test only for WASM filters (issue 42).
		{"policy_rule", PolicyDenied(
			Context{Server: "github", Source: globalSource},
			Denial{Method: "tools/call", Tool: "push", Link: "no-prod", LinkKind: LinkRule, Kind: "policy", Agent: "ci",
				LinkSource: Source{File: "/home/alice/app/nexus.hcl", Layer: "project", Line: 52},
				Reason:     "ci works on staging repositories only"})},
		{"policy_lock", PolicyDenied(
			Context{Server: "github", Source: globalSource},
			Denial{Method: "tools/call", Tool: "push", Link: "lock", LinkKind: LinkLock, Kind: "policy", Agent: "ci",
				Reason: "github.push is new since the lockfile was written; review it with nexus lock --check, accept it with nexus lock --server github"})},
		{"policy_plugin_failed", PolicyDenied(
			Context{Server: "github", Source: globalSource},
			Denial{Method: "tools/call", Tool: "push", Link: "limits", LinkKind: LinkPlugin, Kind: "policy", Agent: "ci",
				LinkSource: Source{File: "/home/alice/app/nexus.hcl", Layer: "project", Line: 60},
				Failure:    "plugin: the process exited"})},
		{"policy_filter_failed", PolicyDenied(
			Context{Server: "files", Source: projectSource},
			Denial{Method: "resources/read", Link: "pii-scan", LinkKind: LinkWASM, Kind: "sanitizer", Agent: "cli",
				LinkSource: Source{File: "/home/alice/app/nexus.hcl", Layer: "project", Line: 41},
				Failure:    "wasm: out of fuel after 100000000 instructions"})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkGolden(t, tc.name, tc.r.Error()+"\n")
		})
	}
}

func TestBodyExcerpt(t *testing.T) {
	if got := bodyExcerpt(""); got != nil {
		t.Fatalf("empty body: %q", got)
	}
	long := strings.Repeat("é", 400) // 800 bytes: the cut must not split a rune
	got := bodyExcerpt(long)
	if len(got) != 1 || !strings.HasSuffix(got[0], " …") || strings.ContainsRune(got[0], '\uFFFD') {
		t.Fatalf("cut body: %q", got)
	}
	many := strings.Repeat("line\n", 30)
	if got := bodyExcerpt(many); len(got) != bodyLines || !strings.HasSuffix(got[bodyLines-1], "…") {
		t.Fatalf("many lines: %q", got)
	}
}

func TestHTTPStatusUnknownURL(t *testing.T) {
	r := HTTPStatus(Context{Server: "x"}, "", "", 500, "", "", nil)
	if !strings.Contains(r.Problem, "The server returned HTTP 500") {
		t.Fatalf("problem: %q", r.Problem)
	}
	// A server's body is server-controlled: escapes never reach the terminal.
	r = HTTPStatus(Context{Server: "x"}, "POST", "http://h/mcp", 400, "bad\x1b[31m red\x1b]0;title\x07", "", nil)
	if strings.ContainsAny(r.Error(), "\x1b\x07") {
		t.Fatalf("escape passed: %q", r.Error())
	}
}
