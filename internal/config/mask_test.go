package config

import (
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/diag"
)

func TestMaskCredential(t *testing.T) {
	for _, c := range []struct{ ptr, in, want string }{
		{"/url", "https://user:pa55@mcp.example.com/mcp", "https://user:***@mcp.example.com/mcp"},
		{"/url", "https://ghp_abc@mcp.example.com/mcp", "https://***@mcp.example.com/mcp"},
		{"/url", "https://x.example/mcp?region=eu&api_key=abc&q=a%20b#frag", "https://x.example/mcp?region=eu&api_key=***&q=a%20b#frag"},
		{"/url", "https://x.example/mcp?access_token=1&Token=2&key=3&keys=4&password=5&sig=6", "https://x.example/mcp?access_token=***&Token=***&key=***&keys=4&password=***&sig=***"},
		{"/url", "https://x.example/mcp?author=me", "https://x.example/mcp?author=me"},
		{"/url", "http://[::1]:8080/mcp", "http://[::1]:8080/mcp"},
		{"/headers/Authorization", "Bearer sk-live-1", "Bearer ***"},
		{"/headers/authorization", "sk-live-1", "***"},
		{"/headers/Proxy-Authorization", "Basic dXNlcjpwYXNz", "Basic ***"},
		{"/headers/X-API-Key", "k", "***"},
		{"/headers/X-Auth-Token", "k", "***"},
		{"/headers/Cookie", "sid=1", "***"},
		{"/headers/X-Trace", "on", "on"},
		{"/env/GITHUB_TOKEN", "ghp_1", "***"},
		{"/env/DB_PASSWORD", "pw", "***"},
		{"/env/AUTHOR", "Ada", "Ada"},
		{"/env/OAUTH_CLIENT_ID", "client", "client"},
		{"/env/DATABASE_URL", "postgres://app:pw@db:5432/app", "postgres://app:***@db:5432/app"},
		{"/command/2", "postgresql://app:pw@localhost/db", "postgresql://app:***@localhost/db"},
		{"/command/1", "--dsn=mysql://root:pw@h/db", "--dsn=mysql://root:***@h/db"},
		{"/command/1", "--verbose", "--verbose"},
		{"/command/1", "--api-key=abc", "--api-key=***"},
		{"/command/3", "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_1", "GITHUB_PERSONAL_ACCESS_TOKEN=***"},
		{"/command/1", "--token-file=/run/token", "--token-file=/run/token"},
		{"/command/1", "--author=Ada", "--author=Ada"},
		{"/config/api_key", "k", "***"},
		{"/plugin/config/nested~1password", "p", "***"},
		{"/config/host", "bastion", "bastion"},
		{"/oauth/client_secret", "s", "***"},
		{"/oauth/private_key", "-----BEGIN", "***"},
		{"/oauth/client_id", "id", "id"},
		{"/env/EMPTY_TOKEN", "", ""},
	} {
		if got := maskCredential(c.ptr, c.in); got != c.want {
			t.Errorf("maskCredential(%q, %q) = %q, want %q", c.ptr, c.in, got, c.want)
		}
	}
}

// TestMaskCommand: a flag naming a credential masks the word after it,
// NAME=value words naming one mask their value, flags that say where a
// credential is kept do not, and URLs are masked wherever they stand.
func TestMaskCommand(t *testing.T) {
	in := []string{"docker", "run", "-e", "GITHUB_TOKEN=ghp_1", "--token", "abc", "--token-file", "/p", "--password", "-v",
		"--auth-url", "https://u:pw@h/x", "--client-secret", "s", "-k", "v"}
	want := []string{"docker", "run", "-e", "GITHUB_TOKEN=***", "--token", "***", "--token-file", "/p", "--password", "-v",
		"--auth-url", "https://u:***@h/x", "--client-secret", "***", "-k", "v"}
	got := diag.MaskCommand(in)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("MaskCommand\n got %q\nwant %q", got, want)
	}
	if in[3] != "GITHUB_TOKEN=ghp_1" {
		t.Error("MaskCommand changed its argument")
	}
	if got := diag.MaskURLs("https://ghp_x@h/mcp?token=t&a=b"); got != "https://***@h/mcp?token=***&a=b" {
		t.Errorf("MaskURL = %q", got)
	}
}

// config show and compile mask what is written in the file and say where,
// server by server; --show-secrets (CompileShowingSecrets, NewView(cfg,
// true)) writes it as it is; references are never values either way.
func TestMaskedOutput(t *testing.T) {
	cfg := mustLoad(t, "mcp.json", `{"mcpServers": {
  "db": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://app:pw-in-file@localhost/app"]},
  "gh": {"command": "docker", "args": ["run", "-e", "GITHUB_TOKEN=gh-in-file", "img", "--token", "flag-in-file", "--token-file", "/run/t"]},
  "api": {"url": "https://api.example.com/mcp?api_key=key-in-file", "headers": {"Authorization": "Bearer ${API_TOKEN}"},
          "oauth": {"client_id": "nexus", "client_secret": "secret-in-file", "token_url": "https://u:pass-in-url@as.example.com/token?api_key=qkey-in-url"}}
}, "filters": [{"name": "f", "kind": "policy", "plugin": "p", "config": {"token": "tok-in-file"}}],
   "plugins": {"p": {"path": "/opt/p"}}}`, env("API_TOKEN", "from-env"))
	literals := []string{"pw-in-file", "key-in-file", "secret-in-file", "tok-in-file", "gh-in-file", "flag-in-file", "pass-in-url", "qkey-in-url"}
	var b strings.Builder
	for _, format := range Formats {
		out, warns, err := Compile(cfg, format)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("--- " + format + "\n")
		b.Write(out)
		for _, w := range warns {
			b.WriteString(w.String() + "\n")
		}
	}
	v := NewView(cfg, false)
	b.WriteString("--- view warnings\n")
	for _, w := range v.Warnings {
		b.WriteString(w.String() + "\n")
	}
	got := b.String()
	for _, s := range append(literals, "from-env") {
		if strings.Contains(got, s) {
			t.Errorf("%q was printed", s)
		}
	}
	golden(t, "masked_output", got)

	out, _, _ := CompileShowingSecrets(cfg, FormatNexusJSON)
	for _, s := range literals {
		if !strings.Contains(string(out), s) {
			t.Errorf("--show-secrets left out %q:\n%s", s, out)
		}
	}
	if strings.Contains(string(out), "from-env") {
		t.Errorf("--show-secrets wrote a value from the environment:\n%s", out)
	}
}
