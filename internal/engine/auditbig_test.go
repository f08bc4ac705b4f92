package engine_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/engine"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

// No call goes unrecorded: arguments of 1, 2 and 16 MB, far over what a
// record holds, leave a record each (keyed digest, length, a redacted
// preview), whether the call is allowed or denied by the agent's deny
// list, a CEL rule or a WASM filter. The old host dropped each of these
// records ("a record of N bytes is over the 1048576-byte limit") and ran
// the call anyway, fail_closed or not.
func TestAuditBigArguments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WASM filter")
	}
	wasmPath := filtertest.Build(t, "../../filters/tool-allowlist")
	w := newWorld()
	open := json.RawMessage(`{"type":"object"}`)
	w.server("gh", mcp.Tool{Name: "echo", InputSchema: open}, mcp.Tool{Name: "agent_denied", InputSchema: open},
		mcp.Tool{Name: "cel_denied", InputSchema: open}, mcp.Tool{Name: "wasm_denied", InputSchema: open})
	dir := t.TempDir()
	mac, seed, _, err := audit.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	cfgText := `
server "gh" {
  stdio {
    command = "in-process"
  }
}
filter "allowlist" {
  kind   = "policy"
  wasm   = "` + filepath.ToSlash(wasmPath) + `"
  sha256 = "` + sum(t, wasmPath) + `"
  config = { allow = ["gh.echo", "gh.agent_denied", "gh.cel_denied"] }
  limits {
    timeout = "60s" # a 16 MB event, under -race
  }
}
rule "no-cel" {
  when   = "tool.name == 'cel_denied'"
  action = "deny"
  reason = "CEL says no"
}
agent "y" {
  permission = "yolo"
  deny       = ["gh.agent_denied"]
}
audit {
  path              = "audit.jsonl"
  include_arguments = true
  fail_closed       = true
  key               = env("AUDIT_KEY")
  signing_key       = env("AUDIT_SIGNING_KEY")
  checkpoint_every  = 4
}
`
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"AUDIT_KEY": mac, "AUDIT_SIGNING_KEY": seed}
	cfg, err := config.Load(config.Options{Files: []string{"nexus.hcl"}, Dir: dir, Home: dir, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	h := engine.New(cfg, engine.Options{Dial: w.dial})
	const token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	type call struct {
		tool string
		size int
	}
	var calls []call
	for _, size := range []int{1 << 20, 2 << 20, 16 << 20} {
		for _, tool := range []string{"echo", "agent_denied", "cel_denied", "wasm_denied"} {
			calls = append(calls, call{tool, size})
			args := map[string]any{"a_token": token, "message": strings.Repeat("x", size)}
			_, err := h.CallTool(ctx, "y", "gh."+tool, args, nil)
			var ae *engine.AuditError
			if errors.As(err, &ae) {
				t.Fatalf("%s with %d bytes: refused by the audit log: %v", tool, size, err)
			}
			if (tool == "echo") != (err == nil) {
				t.Errorf("%s with %d bytes: %v", tool, size, err)
			}
		}
	}
	h.Close()

	f, err := os.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, audit.MaxLine+1)
	var recs []audit.Record
	for sc.Scan() {
		if strings.Contains(sc.Text(), "ghp_") {
			t.Errorf("the token reached the log: %.300s", sc.Text())
		}
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Method == mcp.MethodToolsCall {
			recs = append(recs, r)
		}
	}
	if len(recs) != len(calls) {
		t.Fatalf("%d calls, %d records", len(calls), len(recs))
	}
	for i, r := range recs {
		c := calls[i]
		wantDecision := map[string]string{"echo": "allow", "agent_denied": "deny", "cel_denied": "deny", "wasm_denied": "deny"}[c.tool]
		if r.Tool != c.tool || r.Decision != wantDecision || r.ArgsHMAC == "" || r.ArgsSHA256 != "" || r.ArgsBytes < c.size || r.Args != nil ||
			!strings.Contains(r.ArgsPreview, `"message":"xxx`) || len(r.ArgsPreview) > audit.PreviewBytes {
			t.Errorf("call %d (%s, %d bytes): %s %s %s args %d bytes, preview %.120q, flags %v", i, c.tool, c.size, r.Tool, r.Decision, r.Link, r.ArgsBytes, r.ArgsPreview, r.Flags)
		}
	}
	keys, err := audit.ConfigKeys(cfg.Audit)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := audit.VerifyWith(audit.VerifyOptions{Key: keys.MAC, Public: keys.Public, Checkpoints: filepath.Join(dir, "audit.jsonl.checkpoints")}, filepath.Join(dir, "audit.jsonl"))
	if err != nil || rep.Uncovered != 0 || rep.Checkpoints == 0 {
		t.Errorf("verify: %+v %v", rep, err)
	}
}
