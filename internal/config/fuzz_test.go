package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// fuzzLoader parses in memory with a fixed, empty environment and
// unresolved variables allowed, so every input reaches the decoders.
func fuzzLoader() *loader {
	return &loader{opts: Options{AllowUnset: true}, lookup: env(), home: "/nonexistent/home", dir: "/nonexistent/dir", answers: map[string]string{}}
}

func addSeeds(f *testing.F, pattern string, extra ...string) {
	m, _ := filepath.Glob(pattern)
	for _, p := range m {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// FuzzJSON: no input makes the JSON front end panic, and every error it
// returns renders.
func FuzzJSON(f *testing.F) {
	addSeeds(f, "../../examples/configs/*.json",
		`{"mcpServers": {"a": {"command": "x", "args": ["${A:-b}"], "env": {"K": "${env:K}"}}}}`,
		`{"servers": [{"name": "a", "command": ["x"]}], "inputs": [{"id": "i", "type": "promptString"}]}`,
		`{"mcpServers": {"a": {"url": "http://x", "type": "sse", "oauth": {"scopes": []}}}, "filters": [{"name": "f", "kind": "policy", "plugin": "p", "match": [{}]}]}`,
		"{\n// c\n\"mcpServers\": {,},\n}", `{"mcpServers": {"a": {"command": "\u00e9\"\\"}}}`, "\xef\xbb\xbf{}", "",
		`{"mcpServers": {"a": {"command": "x", "prefix": ""}}, "agents": {"c": {"permission": "yolo", "tokens": ["${T}", ""]}}}`,
		`{"gateway": {"listen": ":1", "public_url": "https://x/mcp", "allowed_origins": ["http://localhost"], "required_servers": ["a"],
  "tls": {"cert": "c"}, "limits": {"max_sessions": 0, "shutdown_grace": "1s"},
  "oauth": {"issuer": "https://i", "agents": {"*": "c"}, "agent_claim": ""}}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := fuzzLoader().parseBytes(data, diag.Source{File: "fuzz.json", Layer: "fuzz"}, false)
		if err != nil {
			_ = errText(err)
		}
	})
}

// maxFuzzInput bounds what the fuzz targets decode. The front ends'
// paths do not depend on size past a few lines, and Go's fuzzer minimizes
// every input that finds new coverage for up to a minute, trying it with
// each byte left out: on the 1-3 KB example files that took all of a short
// run (`make fuzz`: a dozen counted executions in 20 s, the rest spent
// minimizing), so the seeds are small and long inputs are passed over.
const maxFuzzInput = 1 << 10

// FuzzHCL: no input makes the HCL front end panic (the loader's recover
// would hide it, so a caught panic fails), and every error it returns
// renders. The seeds are a few lines each, one feature apiece; the shipped
// examples load in TestCompileExamples.
func FuzzHCL(f *testing.F) {
	for _, s := range []string{
		// Blocks and their settings.
		"server \"a\" {\n  timeout = \"30s\"\n  prefix  = \"a_\"\n  stdio {\n    command = \"x\"\n    args    = [\"-y\"]\n    env     = { K = \"v\" }\n    cwd     = \".\"\n  }\n}\n",
		"server \"h\" {\n  http {\n    url         = \"https://u:p@x/mcp?token=t\"\n    headers     = { Authorization = \"Bearer t\" }\n    max_retries = 2\n    legacy_sse  = true\n  }\n  oauth {\n    grant  = \"client_credentials\"\n    scopes = [\"a\"]\n  }\n}\n",
		"server \"p\" {\n  plugin {\n    name   = \"ssh\"\n    config = { n = 1, l = [\"q\"] }\n  }\n}\nplugin \"ssh\" {\n  path   = \"ssh\"\n  sha256 = \"00\"\n}\n",
		"server \"a\" { stdio { command = [] } }",
		"filter \"f\" {\n  kind     = \"policy\"\n  wasm     = \"x\"\n  on_error = \"allow\"\n  config   = { a = [1] }\n  match {\n    tools = [\"*\"]\n  }\n  limits {}\n  limits {}\n}\n",
		"agent \"a\" {\n  permission = \"yolo\"\n  servers    = [\"s\"]\n  deny       = [\"*.rm\"]\n  tokens     = [\"0123456789abcdef\"]\n}\nnexus {\n  roots = [\"~/src\"]\n}\n",
		"gateway {\n  listen          = \"127.0.0.1:1\"\n  allowed_origins = [\"https://a.example\"]\n  tls {\n    cert = \"c\"\n  }\n  limits {\n    max_sessions   = 0\n    shutdown_grace = \"1s\"\n  }\n}\n",
		"gateway {\n  required_servers = [\"a\"]\n  oauth {\n    issuer = \"http://localhost\"\n    agents = { \"*\" = \"b\" }\n  }\n}\n",
		// Variables, locals and functions.
		"locals {\n  a = indent(3, \"x\\ny\")\n  b = format(\"%-5s|%.2f\", \"x\", 1)\n  c = range(1, 9, 2)\n  d = replace(\"ab\", \"/a/\", \"c\")\n  e = regex_replace(\"a1\", \"[0-9]\", \"#\")\n}\n",
		"variable \"v\" {\n  default = [1, 2]\n}\nlocals {\n  a = concat([for x in var.v : tostring(x)], split(\",\", \"a,b\"))\n  b = jsondecode(\"{\\\"k\\\": 1}\")\n  c = try(local.b.k, 0)\n}\n",
		"locals {\n  a = local.b\n  b = local.a\n}\n",
		"dynamic \"server\" {\n  for_each = { a = 1 }\n  labels   = [server.key]\n  content {\n    stdio { command = \"x\" }\n  }\n}\n",
		// Marks: env() and sensitive variables in defaults, locals and functions.
		"variable \"t\" {\n  sensitive = true\n  default   = \"x\"\n}\nserver \"a\" {\n  http {\n    url     = \"http://x/${var.t}\"\n    headers = { A = lower(var.t) }\n  }\n}\n",
		"variable \"tok\" {\n  sensitive = true\n  default   = env(\"X\")\n}\nserver \"a\" {\n  stdio {\n    command = \"x\"\n    env     = { T = var.tok }\n  }\n}\n",
		"variable \"p\" {\n  default = env(\"X\")\n}\nlocals {\n  l = upper(var.p)\n  m = \"${var.p}-${env(\"Y\", \"d\")}\"\n}\nserver \"a\" {\n  stdio {\n    command = local.m\n    args    = [local.l]\n  }\n}\n",
		"variable \"n\" {\n  sensitive = true\n  default   = 3\n}\n",
		"variable \"s\" {\n  sensitive = true\n  default   = env(\"X\")\n}\nagent \"a\" {\n  permission = \"yolo\"\n  tokens     = [var.s, lower(var.s)]\n}\n",
		"gateway {\n  listen = \"127.0.0.1:1\"\n  oauth {\n    issuer = env(\"X\")\n    agents = { (env(\"X\")) = \"a\" }\n  }\n}\n",
	} {
		if len(s) > maxFuzzInput {
			f.Fatalf("seed over maxFuzzInput: %q", s)
		}
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		_, err := fuzzLoader().parseBytes(data, diag.Source{File: "fuzz.hcl", Layer: "fuzz"}, true)
		if err != nil {
			if text := errText(err); strings.Contains(text, "Nexus failed while reading this file") {
				t.Fatalf("the loader panicked (caught at its boundary):\n%s", text)
			}
		}
	})
}
