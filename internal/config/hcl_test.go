package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHCLServers(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "conf/token.txt", "from-file\n")
	write(t, dir, "conf/nexus.hcl", `
variable "region" { default = "eu" }
variable "api_token" {
  sensitive = true
}
variable "ports" { default = [1, 2] }
locals {
  base  = "https://${var.region}.example.com"
  auth  = "Bearer ${var.api_token}"
  extra = concat(["--x"], [for p in var.ports : tostring(p)])
}
server "web" {
  timeout = 45
  http {
    url           = "${local.base}/mcp"
    headers       = { Authorization = local.auth, "X-Env" = env("WHO", "nobody"), "X-File" = trimspace(file("token.txt")) }
    max_retries   = 2
    retry_backoff = "250ms"
  }
}
server "local" {
  stdio {
    command = "./bin/server"
    args    = concat(local.extra, [upper(var.region)])
    cwd     = "work"
    env     = merge({ A = "1" }, { T = var.api_token })
  }
}
`)
	cfg, err := Load(Options{Files: []string{"conf/nexus.hcl"}, Dir: dir, Home: dir,
		LookupEnv: env("API_TOKEN", "t0k", "NEXUS_VAR_ports", "[7]")})
	if err != nil {
		t.Fatal(err)
	}
	web := cfg.Server("web")
	if web.URL != "https://eu.example.com/mcp" || web.HTTP.Headers["Authorization"] != "Bearer t0k" ||
		web.HTTP.Headers["X-Env"] != "nobody" || web.HTTP.Headers["X-File"] != "from-file" ||
		*web.HTTP.MaxRetries != 2 || web.HTTP.RetryBackoff != 250*time.Millisecond || web.Timeout != 45*time.Second {
		t.Errorf("web: %+v", web)
	}
	wantRefs := map[string]string{"/headers/Authorization": "Bearer ${API_TOKEN}", "/headers/X-Env": "${WHO:-nobody}"}
	if got := refStrings(web.Refs); !reflect.DeepEqual(got, wantRefs) {
		t.Errorf("web refs %v, want %v", got, wantRefs)
	}
	local := cfg.Server("local")
	conf := filepath.Join(dir, "conf")
	if want := []string{filepath.Join(conf, "bin/server"), "--x", "7", "EU"}; !reflect.DeepEqual(local.Command, want) {
		t.Errorf("command %q, want %q", local.Command, want)
	}
	if local.Stdio.Cwd != filepath.Join(conf, "work") {
		t.Errorf("cwd %q", local.Stdio.Cwd)
	}
	if got := refStrings(local.Refs); !reflect.DeepEqual(got, map[string]string{"/env/T": "${API_TOKEN}"}) {
		t.Errorf("local refs %v", got)
	}
	if local.Source.Line != 21 || web.Source.Line != 12 {
		t.Errorf("origins %v %v", local.Source, web.Source)
	}
}

func refStrings(refs map[string]Template) map[string]string {
	out := map[string]string{}
	for k, t := range refs {
		out[k] = t.String()
	}
	return out
}

func TestHCLDynamicAndBlocks(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
locals {
  tools = { a = ["x"], b = ["y", "z"] }
}
dynamic "server" {
  for_each = local.tools
  labels   = [server.key]
  content {
    stdio {
      command = "run"
      args    = server.value
    }
  }
}
plugin "p" { path = "plug" }
filter "f" {
  kind   = "policy"
  plugin = "p"
  dynamic "match" {
    for_each = ["a", "b"]
    content { servers = [match.value] }
  }
  limits { pool = 2 }
}
agent "bot" {
  permission = "trusted"
  servers    = ["a", "nope"]
}
server "t" {
  plugin {
    name   = "p"
    config = { n = 1, list = ["q"] }
  }
}
`, nil)
	if got := cfg.Names(); !reflect.DeepEqual(got, []string{"a", "b", "t"}) {
		t.Errorf("servers %v", got)
	}
	if !reflect.DeepEqual(cfg.Server("b").Command, []string{"run", "y", "z"}) {
		t.Errorf("b: %q", cfg.Server("b").Command)
	}
	f := cfg.Filters[0]
	if len(f.Match) != 2 || f.Match[1].Servers[0] != "b" || f.Limits.Pool != 2 || f.OnError != "deny" || f.ABI != "" {
		t.Errorf("filter %+v", f)
	}
	if a := cfg.Agent("bot"); a == nil || a.Permission != "trusted" {
		t.Errorf("agent %+v", a)
	}
	found := false
	for _, w := range cfg.Warnings {
		found = found || strings.Contains(w.Message, `server "nope" is not configured`)
	}
	if !found {
		t.Errorf("an agent naming an unknown server should warn: %v", cfg.Warnings)
	}
	if p := cfg.Server("t").Plugin; p.Config["n"] != float64(1) {
		t.Errorf("plugin config %v", p.Config)
	}
}

func TestHCLJSONSyntax(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl.json", `{
  "variable": {"who": {"default": "ada"}},
  "server": {"t": {"stdio": {"command": "nexus", "args": ["testserver", "${var.who}"]}}}
}`, nil)
	if !reflect.DeepEqual(cfg.Server("t").Command, []string{"nexus", "testserver", "ada"}) {
		t.Errorf("%q", cfg.Server("t").Command)
	}
}

// TestHCLErrors pins the text of HCL errors: hcl's diagnostics, with the
// file, layer, line, column and a snippet.
func TestHCLErrors(t *testing.T) {
	cases := []struct{ name, src string }{
		{"syntax", "server \"a\" {\n  stdio {\n    command = \"x\n  }\n}\n"},
		{"unknown_block", "sevrer \"a\" {\n}\n"},
		{"unknown_argument", "server \"a\" {\n  stdio {\n    comand = \"x\"\n  }\n}\n"},
		{"locals_cycle", "locals {\n  a = local.b\n  b = \"${local.c}-x\"\n  c = local.a\n}\n"},
		{"missing_file", "server \"a\" {\n  stdio {\n    command = \"x\"\n    env = { K = file(\"nope.txt\") }\n  }\n}\n"},
		{"two_transports", "server \"a\" {\n  stdio { command = \"x\" }\n  http { url = \"http://x/mcp\" }\n}\n"},
		{"no_transport", "server \"a\" {\n  timeout = 5\n}\n"},
		{"duplicate_server", "server \"a\" {\n  stdio { command = \"x\" }\n}\nserver \"a\" {\n  stdio { command = \"y\" }\n}\n"},
		{"wrong_type", "server \"a\" {\n  stdio {\n    command = \"x\"\n    args    = \"-y\"\n    env     = [\"A=1\"]\n  }\n}\n"},
		{"undefined_env", "server \"a\" {\n  stdio {\n    command = \"x\"\n    env = { T = env(\"GITHUB_TOKEN\") }\n  }\n}\n"},
		{"unset_variable", "variable \"token\" {\n  sensitive = true\n}\n"},
		{"transformed_secret", "variable \"token\" {\n  sensitive = true\n  default   = \"Abc\"\n}\nserver \"a\" {\n  stdio {\n    command = \"x\"\n    env = { T = lower(var.token) }\n  }\n}\n"},
		{"bad_values", "filter \"f\" {\n  kind = \"polcy\"\n  wasm = \"f.wasm\"\n  on_error = \"ignore\"\n}\nagent \"b\" {\n  permission = \"root\"\n}\n"},
		{"unknown_variable", "server \"a\" {\n  stdio {\n    command = var.cmd\n  }\n}\n"},
		{"env_default_unset", "variable \"token\" {\n  sensitive = true\n  default   = env(\"LEGACY_TOKEN\")\n}\n"},
		{"empty", " \n\n"},
		{"synonym_argument", "server \"a\" {\n  stdio {\n    command   = \"x\"\n    arguments = [\"-y\"]\n  }\n}\n"},
		{"bad_confirm", "server \"a\" {\n  confirm = \"always\"\n  stdio { command = \"x\" }\n}\n"},
		{"bad_start", "server \"a\" {\n  start = \"later\"\n  stdio { command = \"x\" }\n}\n"},
		{"bad_mode", "filter \"f\" {\n  kind = \"policy\"\n  wasm = \"f.wasm\"\n  mode = \"shaddow\"\n}\n"},
		{"bad_abi", "filter \"f\" {\n  kind = \"policy\"\n  wasm = \"f.wasm\"\n  abi  = \"rego\"\n}\nfilter \"g\" {\n  kind = \"policy\"\n  wasm = \"g.wasm\"\n  abi  = 2\n}\n"},
		{"rule_syntax", "rule \"no-deletes\" {\n  when   = \"agent.id == 'ci' &&\"\n  action = \"deny\"\n}\n"},
		{"rule_field", "agent \"ci\" {\n  permission = \"trusted\"\n  rule \"r\" {\n    when   = \"tool.nmae.startsWith('delete_')\"\n    action = \"deny\"\n  }\n}\n"},
		{"rule_heredoc", "rule \"h\" {\n  when = <<EOT\nagent.id == 'ci' &&\n  args.limit > 'x' + 1\nEOT\n  action = \"deny\"\n}\n"},
		{"rule_set", "rule \"cap\" {\n  when   = \"has(args.limit)\"\n  action = \"modify\"\n  set    = { \"arguments.limit\" = \"min(args.limit, \" }\n}\n"},
		{"rule_action", "rule \"a\" {\n  when   = \"true\"\n  action = \"block\"\n}\n"},
		{"rule_and_filter", "filter \"x\" {\n  kind = \"policy\"\n  wasm = \"x.wasm\"\n}\nrule \"x\" {\n  when   = \"true\"\n  action = \"deny\"\n}\n"},
		{"function_indent", "locals {\n  big = indent(1000000000, \"a\\nb\")\n}\n"},
		{"function_format", "locals {\n  big = format(\"%-99999999s\", \"\")\n}\n"},
		{"function_range", "locals {\n  big = range(1000000000)\n}\n"},
		{"function_replace", "locals {\n  s   = join(\"\", [for i in range(1000) : \"aaaa\"])\n  big = replace(local.s, \"a\", local.s)\n}\n"},
		{"for_nested", "locals {\n  n   = range(1000)\n  big = [for a in local.n : [for b in local.n : a * b]]\n}\n"},
		{"entrypoint_on_plugin", "plugin \"p\" {\n  path = \"/bin/true\"\n}\nfilter \"f\" {\n  kind       = \"policy\"\n  plugin     = \"p\"\n  entrypoint = \"nexus/allow\"\n}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadOne(t, "nexus.hcl", tc.src, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "hcl_"+tc.name, errText(err))
		})
	}
}

// A Rego filter: abi, entrypoint and data_file, relative to the config.
func TestHCLRegoFilter(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
filter "rego" {
  kind       = "policy"
  wasm       = "policies/bundle.tar.gz"
  abi        = "opa"
  entrypoint = "nexus/decision"
  data_file  = "policies/data.json"
  config     = { allowed = ["echo"] }
}
`, nil)
	f := cfg.Filters[0]
	if f.ABI != ABIOPA || f.Entrypoint != "nexus/decision" || !filepath.IsAbs(f.DataFile) || filepath.Base(f.DataFile) != "data.json" || !filepath.IsAbs(f.WASM) {
		t.Fatalf("%+v", f)
	}
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"abi": "opa"`, `"entrypoint": "nexus/decision"`, `"data_file": "`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("compiled config lacks %s:\n%s", want, out)
		}
	}
	back := mustLoad(t, "nexus.json", string(out), nil)
	if g := back.Filters[0]; g.ABI != f.ABI || g.Entrypoint != f.Entrypoint || g.DataFile != f.DataFile {
		t.Errorf("round trip: %+v", g)
	}
}

// Rules: top-level ones are links of the chain in config order among the
// filters; an agent's are its own; both compile at load and go through
// nexus-json and back.
func TestHCLRules(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
filter "first" {
  kind = "policy"
  wasm = "first.wasm"
}
rule "no-deletes-for-ci" {
  when   = "agent.id == 'ci' && tool.name.startsWith('delete_')"
  action = "deny"
  reason = "CI may not delete"
  mode   = "shadow"
}
rule "cap" {
  when   = "has(args.limit) && args.limit > 100"
  action = "modify"
  set    = { "arguments.limit" = "100", "arguments.note" = "'capped'" }
}
agent "ci" {
  permission = "trusted"
  rule "read-only" {
    when   = "!tool.annotations.readOnlyHint"
    action = "deny"
    reason = "ci only reads"
  }
}
`, nil)
	var names []string
	for _, f := range cfg.Filters {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "first,no-deletes-for-ci,cap" {
		t.Fatalf("chain order %v", names)
	}
	r := cfg.Filters[1]
	if r.Rule == nil || r.Rule.Compiled == nil || r.Mode != ModeShadow || r.Rule.Reason != "CI may not delete" || r.Rule.When.Source.Line != 7 || r.Rule.When.Source.Column != 13 {
		t.Fatalf("%+v %+v", r, r.Rule)
	}
	if set := cfg.Filters[2].Rule.Set; len(set) != 2 || set[0].Path != "arguments.limit" || set[0].Value.Source.Column != 35 {
		t.Fatalf("set %+v", set)
	}
	ci := cfg.Agents[0]
	if len(ci.Rules) != 1 || ci.Rules[0].Rule.Compiled == nil || ci.Rules[0].Rule.Compiled.Spec().Agent != "ci" {
		t.Fatalf("agent rules %+v", ci.Rules)
	}
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	back := mustLoad(t, "nexus.json", string(out), nil)
	if len(back.Filters) != 3 || back.Filters[2].Rule == nil || back.Filters[2].Rule.Compiled == nil || len(back.Filters[2].Rule.Set) != 2 ||
		back.Filters[1].Mode != ModeShadow || len(back.Agents[0].Rules) != 1 || back.Agents[0].Rules[0].Rule.Reason != "ci only reads" {
		t.Fatalf("round trip:\n%s", out)
	}
}

// An error in a local does not hide the errors after it.
func TestHCLAllErrorsAtOnce(t *testing.T) {
	_, err := loadOne(t, "nexus.hcl", `
locals {
  a = local.a
  b = "${local.a}-x"
}
variable "v" {
  sensitive = true
}
server "s" {
  stdio {
    comand  = "x"
    command = local.b
    args    = [var.v]
  }
}
server "t" {
  http { url = "ftp://x" }
}
`, nil)
	reps := Reports(err)
	var problems []string
	for _, r := range reps {
		problems = append(problems, r.Problem)
	}
	if len(reps) != 4 {
		t.Fatalf("want the cycle, the variable, the unknown argument and the URL, got:\n%s", strings.Join(problems, "\n"))
	}
}

func TestHCLOAuthFields(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
server "cc" {
  http { url = "https://x.example/mcp" }
  oauth {
    grant               = "client_credentials"
    client_id           = "svc"
    client_secret       = env("SECRET")
    client_metadata_url = "https://nexus.example/client.json"
    signing_alg         = "RS256"
    key_id              = "k"
    idp_issuer          = "https://idp.example"
  }
}
`, env("SECRET", "s3"))
	o := cfg.Server("cc").OAuth
	if o.Grant != "client_credentials" || o.ClientSecret != "s3" || o.ClientMetadataURL != "https://nexus.example/client.json" ||
		o.SigningAlg != "RS256" || o.KeyID != "k" || o.IdPIssuer != "https://idp.example" {
		t.Errorf("%+v", o)
	}
	_, err := loadOne(t, "nexus.hcl", "server \"a\" {\n  http { url = \"https://x/mcp\" }\n  oauth { grant = \"client_credential\" }\n}\n", nil)
	if err == nil || !strings.Contains(err.Error(), `oauth grant must be one of`) || !strings.Contains(err.Error(), `"client_credentials"?`) {
		t.Errorf("bad grant: %v", err)
	}
}

// Functions within the limits work as ever; the limits stop only what
// would be far larger than a config needs.
func TestHCLFunctionsWithinLimits(t *testing.T) {
	cfg := mustLoad(t, "nexus.hcl", `
locals {
  pad  = format("%-8s|%5.2f", "ab", 3.14159)
  text = indent(2, "a\nb")
  nums = [for n in range(3) : tostring(n)]
  dash = replace("a-b-c", "-", "_")
  re   = regex_replace("a1b22", "[0-9]+", "#")
  grid = flatten([for a in range(200) : [for b in range(200) : a * b]])
}
server "a" {
  stdio {
    command = "x"
    args    = concat([local.pad, local.text, local.dash, local.re], local.nums, [tostring(local.grid[39999])])
  }
}
`, nil)
	want := []string{"ab      | 3.14", "a\n  b", "a_b_c", "a#b#", "0", "1", "2", "39601"}
	if got := cfg.Server("a").Command[1:]; !reflect.DeepEqual(got, want) {
		t.Errorf("args %q, want %q", got, want)
	}
}
