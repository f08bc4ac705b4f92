package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/diag"
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
		"{\n// c\n\"mcpServers\": {,},\n}", `{"mcpServers": {"a": {"command": "\u00e9\"\\"}}}`, "\xef\xbb\xbf{}", "")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := fuzzLoader().parseBytes(data, diag.Source{File: "fuzz.json", Layer: "fuzz"}, false)
		if err != nil {
			_ = errText(err)
		}
	})
}

// FuzzHCL: no input makes the HCL front end panic, and every error it
// returns renders.
func FuzzHCL(f *testing.F) {
	addSeeds(f, "../../examples/configs/*.hcl",
		string(defaultHCL),
		"locals {\n  a = local.b\n  b = local.a\n}\n",
		"variable \"t\" {\n sensitive = true\n default = \"x\"\n}\nserver \"a\" {\n http {\n url = \"http://x/${var.t}\"\n headers = { A = lower(var.t) }\n }\n}\n",
		"dynamic \"server\" {\n for_each = {a = 1}\n labels = [server.key]\n content {\n stdio { command = \"x\" }\n }\n}\n",
		"server \"a\" { stdio { command = [] } }", "filter \"f\" {\n kind = \"policy\"\n wasm = \"x\"\n limits {}\n limits {}\n}\n",
		// Marks: env() and sensitive variables in defaults, locals and functions.
		"variable \"tok\" {\n sensitive = true\n default = env(\"X\")\n}\nserver \"a\" {\n stdio {\n command = \"x\"\n env = { T = var.tok }\n }\n}\n",
		"variable \"p\" {\n default = env(\"X\")\n}\nlocals {\n l = upper(var.p)\n m = \"${var.p}-${env(\"Y\")}\"\n}\nserver \"a\" {\n stdio {\n command = local.m\n args = [local.l]\n }\n}\n",
		"variable \"n\" {\n sensitive = true\n default = 3\n}\n",
		"variable \"s\" {\n sensitive = true\n default = env(\"X\")\n}\nagent \"a\" {\n permission = \"yolo\"\n tokens = [var.s, lower(var.s)]\n}\n",
		"gateway {\n listen = \"127.0.0.1:1\"\n oauth {\n issuer = env(\"X\")\n agents = { (env(\"X\")) = \"a\" }\n }\n}\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := fuzzLoader().parseBytes(data, diag.Source{File: "fuzz.hcl", Layer: "fuzz"}, true)
		if err != nil {
			if text := errText(err); strings.Contains(text, "Nexus failed while reading this file") {
				t.Fatalf("the loader panicked (caught at its boundary):\n%s", text)
			}
		}
	})
}
