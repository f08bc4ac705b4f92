package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
)

func TestClaudeDesktop(t *testing.T) {
	cfg := mustLoad(t, "claude_desktop_config.json", `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"KEY": "v"}}
  }
}`, nil)
	s := cfg.Server("fs")
	if s == nil || s.Type != TypeStdio || !s.Enabled {
		t.Fatalf("server: %+v", s)
	}
	if want := []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"}; !reflect.DeepEqual(s.Command, want) {
		t.Errorf("command %q, want %q", s.Command, want)
	}
	if s.Stdio.Env["KEY"] != "v" || s.Refs != nil {
		t.Errorf("env %v refs %v", s.Stdio.Env, s.Refs)
	}
	if s.Source.Line != 4 || s.Source.Column != 5 || s.Source.Layer != LayerFlag {
		t.Errorf("origin %+v", s.Source)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("other Claude Desktop settings should not warn: %v", cfg.Warnings)
	}
}

func TestNexusFormats(t *testing.T) {
	for name, src := range map[string]string{
		"dict":  `{"servers": {"ts": {"command": ["nexus", "testserver"], "cwd": "sub", "env_passthrough": ["NODE_PATH"], "timeout": 60, "fail_if_no_tools": true, "disabled": true}}}`,
		"array": `{"servers": [{"name": "ts", "command": ["nexus", "testserver"], "cwd": "sub", "env_passthrough": ["NODE_PATH"], "timeout": "1m", "fail_if_no_tools": true, "enabled": false}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := mustLoad(t, "mcp.json", src, nil)
			s := cfg.Server("ts")
			if s == nil {
				t.Fatal("no server")
			}
			if !reflect.DeepEqual(s.Command, []string{"nexus", "testserver"}) || s.Timeout != time.Minute ||
				!s.FailIfNoTools || s.Enabled || !reflect.DeepEqual(s.Stdio.EnvPassthrough, []string{"NODE_PATH"}) {
				t.Errorf("%+v", s)
			}
			if !filepath.IsAbs(s.Stdio.Cwd) || filepath.Base(s.Stdio.Cwd) != "sub" {
				t.Errorf("cwd %q should resolve against the file's directory", s.Stdio.Cwd)
			}
		})
	}
}

func TestClaudeCodeVariables(t *testing.T) {
	cfg := mustLoad(t, ".mcp.json", `{"mcpServers": {
  "api": {"type": "http", "url": "${API_BASE:-https://api.example.com}/mcp",
          "headers": {"Authorization": "Bearer ${API_KEY}"}},
  "local": {"type": "stdio", "command": "${TOOL_BIN}", "args": ["--token", "${API_KEY}", "$${LITERAL}"],
            "env": {"K": "${API_KEY}"}},
  "old": {"type": "sse", "url": "http://localhost:9/sse"}
}}`, env("API_KEY", "s3cret", "TOOL_BIN", "/opt/tool"))
	api := cfg.Server("api")
	if api.URL != "https://api.example.com/mcp" || api.HTTP.Headers["Authorization"] != "Bearer s3cret" || api.Type != TypeHTTP {
		t.Errorf("api: %+v", api)
	}
	if got := api.Refs["/headers/Authorization"].String(); got != "Bearer ${API_KEY}" {
		t.Errorf("header template %q", got)
	}
	if got := api.Refs["/url"].String(); got != "${API_BASE:-https://api.example.com}/mcp" {
		t.Errorf("url template %q", got)
	}
	local := cfg.Server("local")
	if want := []string{"/opt/tool", "--token", "s3cret", "${LITERAL}"}; !reflect.DeepEqual(local.Command, want) {
		t.Errorf("command %q, want %q", local.Command, want)
	}
	if local.Refs["/command/0"].String() != "${TOOL_BIN}" || local.Refs["/command/2"].String() != "${API_KEY}" || local.Refs["/env/K"].String() != "${API_KEY}" {
		t.Errorf("refs %v", local.Refs)
	}
	if old := cfg.Server("old"); old.Type != TypeSSE || !old.LegacySSE {
		t.Errorf("sse: %+v", old)
	}
}

func TestCursorVariables(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "proj/.cursor/server.env", "# comment\nexport A=1\nB=\"two words\"\n")
	write(t, dir, "proj/.cursor/mcp.json", `{"mcpServers": {"c": {
  "command": "${userHome}/bin/srv",
  "env": {"P": "${env:PATH_X}", "W": "${workspaceFolder}", "B": "override"},
  "envFile": "${workspaceFolder}/.cursor/server.env"}}}`)
	proj := filepath.Join(dir, "proj")
	cfg, err := Load(Options{Files: []string{".cursor/mcp.json"}, Dir: proj, Home: "/home/ada", LookupEnv: env("PATH_X", "/x")})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server("c")
	if s.Command[0] != "/home/ada/bin/srv" || s.Stdio.Env["P"] != "/x" || s.Stdio.Env["W"] != proj {
		t.Errorf("%+v", s)
	}
	if _, ok := s.Refs["/command/0"]; ok {
		t.Error("${userHome} is not a secret and needs no reference")
	}
	if s.Refs["/env/P"].String() != "${PATH_X}" {
		t.Errorf("refs %v", s.Refs)
	}
	want := map[string]string{"A": "1", "B": "override", "P": "/x", "W": proj}
	if got := s.Stdio.Environ(); !reflect.DeepEqual(got, want) {
		t.Errorf("Environ() = %v, want %v", got, want)
	}
}

type fakePrompter struct {
	answers map[string]string
	asked   []string
}

func (p *fakePrompter) Prompt(in Input) (string, error) {
	p.asked = append(p.asked, in.ID)
	v, ok := p.answers[in.ID]
	if !ok {
		return "", errors.New("no answer")
	}
	return v, nil
}

const vscodeConfig = `{
  // VS Code allows comments and trailing commas.
  "inputs": [{"type": "promptString", "id": "api-key", "description": "API key", "password": true}],
  "servers": {
    "a": {"type": "stdio", "command": "srv", "env": {"KEY": "${input:api-key}"}},
    "b": {"type": "http", "url": "https://x.example/mcp", "headers": {"X-Key": "k=${input:api-key}"},},
  },
}`

func TestVSCodeInputs(t *testing.T) {
	t.Run("terminal", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, "mcp.json", vscodeConfig)
		p := &fakePrompter{answers: map[string]string{"api-key": "typed"}}
		cfg, err := Load(Options{Files: []string{"mcp.json"}, Dir: dir, Home: dir, LookupEnv: env(), Prompter: p})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server("a").Stdio.Env["KEY"] != "typed" || cfg.Server("b").HTTP.Headers["X-Key"] != "k=typed" {
			t.Errorf("values: %v %v", cfg.Server("a").Stdio.Env, cfg.Server("b").HTTP.Headers)
		}
		if len(p.asked) != 1 {
			t.Errorf("asked %v; an input is asked for once", p.asked)
		}
		if cfg.Server("a").Refs["/env/KEY"].String() != "${input:api-key}" {
			t.Errorf("refs %v", cfg.Server("a").Refs)
		}
		if len(cfg.Inputs) != 1 || !cfg.Inputs[0].Password {
			t.Errorf("inputs %+v", cfg.Inputs)
		}
	})
	t.Run("environment", func(t *testing.T) {
		cfg := mustLoad(t, "mcp.json", vscodeConfig, env("NEXUS_INPUT_API_KEY", "from-env"))
		if cfg.Server("a").Stdio.Env["KEY"] != "from-env" {
			t.Errorf("env %v", cfg.Server("a").Stdio.Env)
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, err := loadOne(t, "mcp.json", vscodeConfig, nil)
		if err == nil || !strings.Contains(err.Error(), "NEXUS_INPUT_API_KEY") {
			t.Fatalf("want an error naming NEXUS_INPUT_API_KEY, got %v", err)
		}
	})
}

func TestNexusHTTPFields(t *testing.T) {
	cfg := mustLoad(t, "mcp.json", `{"mcpServers": {"h": {"url": "https://x.example/mcp",
  "http_max_retries": 0, "http_retry_backoff": 0.25, "http_allow_private_networks": true,
  "oauth": {"client_id": "id", "scopes": ["a", "b"]}},
  "p": {"plugin": {"name": "ssh", "config": {"host": "h", "n": 2}}}},
  "plugins": {"ssh": {"path": "./ssh"}}}`, nil)
	h := cfg.Server("h")
	if h.HTTP.MaxRetries == nil || *h.HTTP.MaxRetries != 0 || h.HTTP.RetryBackoff != 250*time.Millisecond || !h.HTTP.AllowPrivateNetworks ||
		h.OAuth == nil || h.OAuth.ClientID != "id" || len(h.OAuth.Scopes) != 2 {
		t.Errorf("%+v", h)
	}
	p := cfg.Server("p")
	if p.Type != TypePlugin || p.Plugin.Name != "ssh" || p.Plugin.Config["n"] != float64(2) {
		t.Errorf("%+v", p)
	}
}

func TestUnknownFieldWarns(t *testing.T) {
	cfg := mustLoad(t, "mcp.json", `{"mcpServer": {}, "mcpServers": {"a": {"comand": "x", "command": "y", "evn": {}}}}`, nil)
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, w.String())
	}
	golden(t, "warnings_unknown_fields", strings.Join(got, "\n")+"\n")
}

func TestDisabledHasNoEffectOnName(t *testing.T) {
	for _, bad := range []string{"a.b", "", strings.Repeat("x", 65), "sp ace"} {
		_, err := loadOne(t, "mcp.json", `{"mcpServers": {"`+bad+`": {"command": "x"}}}`, nil)
		if err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	mustLoad(t, "mcp.json", `{"mcpServers": {"`+strings.Repeat("x", 64)+`": {"command": "x"}, "A_b-9": {"command": "x"}}}`, nil)
}

// TestJSONErrors pins the text of every JSON config error a person sees.
func TestJSONErrors(t *testing.T) {
	cases := []struct{ name, src string }{
		{"syntax_missing_comma", "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" \"args\": [] }\n  }\n}\n"},
		{"syntax_single_quotes", "{\n  'mcpServers': {}\n}\n"},
		{"syntax_truncated", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"}\n"},
		{"empty", "  \n"},
		{"not_object", `["a"]`},
		{"no_servers_key", `{"servers_list": {}}`},
		{"wrong_types", `{"mcpServers": {"a": {"command": "x", "args": "-y", "env": ["A=1"], "timeout": true, "enabled": "yes"}}}`},
		{"command_and_url", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"url\": \"http://localhost/mcp\"}\n}}"},
		{"no_transport", `{"mcpServers": {"a": {"args": ["x"]}}}`},
		{"mixed_formats", "{\n  \"servers\": [{\"name\": \"a\", \"command\": [\"x\"]}],\n  \"mcpServers\": {\"b\": {\"command\": \"y\"}}\n}"},
		{"duplicate_server", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"a\": {\"command\": \"y\"}\n}}"},
		{"undefined_variable", "{\"mcpServers\": {\"gh\": {\n  \"command\": \"npx\",\n  \"env\": {\"GITHUB_TOKEN\": \"${GITHUB_TOKEN}\"}\n}}}"},
		{"bad_type", `{"mcpServers": {"a": {"type": "htp", "url": "http://x/mcp"}}}`},
		{"bad_name", `{"mcpServers": {"my.server": {"command": "x"}}}`},
		{"command_array_and_args", `{"servers": {"a": {"command": ["x"], "args": ["y"]}}}`},
		{"array_without_name", `{"servers": [{"command": ["x"]}]}`},
		{"bad_url", `{"mcpServers": {"a": {"url": "localhost:3000"}}}`},
		{"undeclared_input", `{"servers": {"a": {"command": "x", "env": {"K": "${input:nope}"}}}}`},
		{"bad_filter", `{"filters": [{"name": "f", "kind": "polcy", "wasm": "f.wasm", "plugin": "p", "sha256": "abc"}], "mcpServers": {}}`},
		{"bad_rules", "{\"mcpServers\": {},\n \"filters\": [{\"name\": \"r\", \"kind\": \"policy\", \"rule\": {\"when\": \"agent.idd == 'x'\", \"action\": \"deny\"}}],\n \"agents\": {\"ci\": {\"permission\": \"trusted\", \"rules\": [{\"name\": \"r\", \"when\": \"true\", \"action\": \"modify\"}]}}}"},
		{"unknown_plugin", `{"mcpServers": {"a": {"plugin": {"name": "sssh"}}}, "plugins": {"ssh": {"path": "./ssh"}}}`},
		{"non_utf8", "{\"mcpServers\": {\"a\": {\"command\": \"caf\xe9\"}}}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "mcp.json", tc.src, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "json_"+tc.name, errText(err))
		})
	}
}

func TestSeveralErrorsAtOnce(t *testing.T) {
	_, err := loadOne(t, "mcp.json", `{"mcpServers": {"a": {"args": 1}, "b": {"command": 2}, "c": {"url": "ftp://x"}}}`, nil)
	if n := len(Reports(err)); n < 3 {
		t.Fatalf("%d reports, want every error in the file:\n%v", n, err)
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "sub/x", "")
	big := write(t, dir, "big.json", "")
	if err := truncate(big, MaxFileSize+1); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"directory": "sub", "missing": "nope.json", "too_large": "big.json"} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(Options{Files: []string{path}, Dir: dir, Home: dir, LookupEnv: env()})
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "file_"+name, errText(err))
		})
	}
}

func TestParse(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x"}}}`), diag.Source{File: "inline.json", Layer: "test"})
	if err != nil || cfg.Server("a") == nil {
		t.Fatal(cfg, err)
	}
	if _, err := Parse([]byte(`{`), diag.Source{File: "inline.json"}); err == nil {
		t.Fatal("invalid JSON parsed")
	}
}

// Inputs Nexus cannot ask for (pickString, command) load, and take their
// value from the environment.
func TestOtherInputTypes(t *testing.T) {
	src := `{"inputs": [{"type": "pickString", "id": "region", "options": ["eu", "us"]}],
  "servers": {"a": {"command": "x", "args": ["${input:region}"]}}}`
	cfg := mustLoad(t, "mcp.json", src, env("NEXUS_INPUT_REGION", "eu"))
	if cfg.Server("a").Command[1] != "eu" {
		t.Errorf("%q", cfg.Server("a").Command)
	}
	dir := t.TempDir()
	write(t, dir, "mcp.json", src)
	p := &fakePrompter{}
	if _, err := Load(Options{Files: []string{"mcp.json"}, Dir: dir, Home: dir, LookupEnv: env(), Prompter: p}); err == nil || len(p.asked) != 0 {
		t.Errorf("a pickString input must not be prompted for: err %v, asked %v", err, p.asked)
	}
}

func TestDisabledServerMayReferToUnsetVariables(t *testing.T) {
	cfg := mustLoad(t, "mcp.json", `{"mcpServers": {"off": {"command": "x", "env": {"T": "${NOPE}"}, "disabled": true}}}`, nil)
	if s := cfg.Server("off"); s.Enabled || s.Refs["/env/T"].String() != "${NOPE}" {
		t.Errorf("%+v", s)
	}
}

func TestOAuthFields(t *testing.T) {
	lookup := env("IDT", "id-token-value", "PEM", "-----BEGIN PRIVATE KEY-----")
	cfg := mustLoad(t, "mcp.json", `{"mcpServers": {
  "cc": {"url": "https://x.example/mcp", "oauth": {"grant": "client_credentials", "client_id": "svc",
    "private_key": "${PEM}", "signing_alg": "ES256", "key_id": "k1"}},
  "ent": {"url": "https://y.example/mcp", "oauth": {"grant": "enterprise", "client_id": "c",
    "client_metadata_url": "https://nexus.example/client.json", "id_token": "${IDT}",
    "idp_token_url": "https://idp.example/token", "idp_issuer": "https://idp.example",
    "idp_client_id": "idp-c", "idp_client_secret": "idp-s"}}}}`, lookup)
	cc := cfg.Server("cc").OAuth
	if cc.Grant != "client_credentials" || cc.PrivateKey != "-----BEGIN PRIVATE KEY-----" || cc.SigningAlg != "ES256" || cc.KeyID != "k1" {
		t.Errorf("cc: %+v", cc)
	}
	ent := cfg.Server("ent")
	o := ent.OAuth
	if o.Grant != "enterprise" || o.IDToken != "id-token-value" || o.IdPTokenURL != "https://idp.example/token" ||
		o.IdPIssuer != "https://idp.example" || o.IdPClientID != "idp-c" || o.IdPClientSecret != "idp-s" ||
		o.ClientMetadataURL != "https://nexus.example/client.json" {
		t.Errorf("ent: %+v", o)
	}
	if ent.Refs["/oauth/id_token"].String() != "${IDT}" {
		t.Errorf("refs: %v", ent.Refs)
	}

	_, err := loadOne(t, "mcp.json", `{"mcpServers": {"a": {"url": "https://x.example/mcp", "oauth": {"grant": "implicit"}}}}`, nil)
	if err == nil || !strings.Contains(err.Error(), `oauth.grant must be one of "authorization_code", "client_credentials", "enterprise" or "jwt_bearer", not "implicit"`) {
		t.Errorf("bad grant: %v", err)
	}
}
