package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A client's config converted to nexus.hcl loads back to the same servers
// (compiled to nexus-json, the two are equal), with references to the
// environment and to inputs kept as references.
func TestToHCLRoundTrip(t *testing.T) {
	for name, src := range map[string]string{
		"claude.json": `{"mcpServers": {
  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github", "${HOME}/repos"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}", "MODE": "ro ${MODE:-safe} $${x}"}},
  "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer ${API_TOKEN}", "X-Odd.Key": "%{not a directive}"}},
  "old": {"type": "sse", "url": "https://old.example.com/sse", "disabled": true},
  "tuned": {"url": "https://tuned.example.com/mcp", "http_max_retries": 5, "http_retry_backoff": "2s", "http_allow_private_networks": true}
}}`,
		"mcp.json": `{"inputs": [{"id": "api-key", "type": "promptString", "description": "The API key", "password": true}],
 "servers": {"svc": {"type": "stdio", "command": "svc", "args": ["--key", "${input:api-key}"], "cwd": "/srv"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			env := env("HOME", "/home/u", "GITHUB_TOKEN", "ghp_x", "API_TOKEN", "tok", "MODE", "m", "NEXUS_INPUT_API_KEY", "k")
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			os.WriteFile(path, []byte(src), 0o600)
			before, err := Load(Options{Files: []string{path}, LookupEnv: env})
			if err != nil {
				t.Fatal(err)
			}
			out, warns := ToHCL(before, name)
			if len(warns) != 0 {
				t.Errorf("warnings %v", warns)
			}
			hcl := filepath.Join(dir, "nexus.hcl")
			os.WriteFile(hcl, out, 0o600)
			after, err := Load(Options{Files: []string{hcl}, LookupEnv: env})
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			a, _, err := Compile(before, "nexus-json")
			if err != nil {
				t.Fatal(err)
			}
			b, _, err := Compile(after, "nexus-json")
			if err != nil {
				t.Fatal(err)
			}
			// An input is read from its NEXUS_INPUT_ variable in HCL (which
			// has no prompt of its own); otherwise nothing changes.
			want := strings.ReplaceAll(string(a), "${input:api-key}", "${NEXUS_INPUT_API_KEY}")
			var w, g struct {
				Servers json.RawMessage `json:"mcpServers"`
			}
			json.Unmarshal([]byte(want), &w)
			json.Unmarshal(b, &g)
			if string(w.Servers) != string(g.Servers) {
				t.Errorf("the converted config differs:\n%s\nwas\n%s\nfrom\n%s", b, a, out)
			}
			golden(t, "tohcl_"+name, string(out))
		})
	}
}

// A client config whose cwd and envFile come from the environment converts
// to a nexus.hcl that loads: nexus.hcl reads paths as plain text, so they
// are written as their values (they were written as env() templates,
// which it refuses there).
func TestToHCLPathsFromEnv(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "proj"), 0o700)
	os.WriteFile(filepath.Join(dir, "proj", "vars.env"), []byte("A=1\n"), 0o600)
	src := filepath.Join(dir, "mcp.json")
	os.WriteFile(src, []byte(`{"mcpServers": {"s": {"command": "srv", "cwd": "${BASE}/proj", "envFile": "${BASE}/proj/vars.env"}}}`), 0o600)
	lookup := env("BASE", dir)
	before, err := Load(Options{Files: []string{src}, LookupEnv: lookup})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := ToHCL(before, "mcp.json")
	hcl := filepath.Join(dir, "nexus.hcl")
	os.WriteFile(hcl, out, 0o600)
	after, err := Load(Options{Files: []string{hcl}, LookupEnv: lookup})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if a, b := before.Server("s").Stdio, after.Server("s").Stdio; a.Cwd != b.Cwd || a.EnvFile != b.EnvFile || b.FileEnv["A"] != "1" {
		t.Errorf("before %+v, after %+v", a, b)
	}
	// nexus JSON keeps the templates.
	js, _, err := Compile(before, FormatNexusJSON)
	if err != nil || !strings.Contains(string(js), `"cwd": "${BASE}/proj"`) {
		t.Errorf("nexus JSON lost the cwd template: %v\n%s", err, js)
	}
}
