package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// The audit block's keys come from sensitive variables (HCL) or ${NAME}
// (JSON); compile-down writes the references, never the keys, and leaves
// out a key written in the file.
func TestAuditKeys(t *testing.T) {
	hcl := mustLoad(t, "nexus.hcl", `
variable "audit_key" {
  sensitive = true
}
audit {
  path             = "audit.jsonl"
  key              = var.audit_key
  signing_key      = env("SIGN")
  public_key       = "cHVi"
  checkpoint_path  = "cp/audit.checkpoints"
  checkpoint_every = 50
}`, env("AUDIT_KEY", "k-0123456789abcdef", "SIGN", "c2VlZA=="))
	json := mustLoad(t, "nexus.json", `{"mcpServers": {}, "audit": {"path": "audit.jsonl", "key": "${AUDIT_KEY}", "signing_key": "${SIGN}",
  "public_key": "cHVi", "checkpoint_path": "cp/audit.checkpoints", "checkpoint_every": 50}}`, env("AUDIT_KEY", "k-0123456789abcdef", "SIGN", "c2VlZA=="))
	for name, cfg := range map[string]*Config{"hcl": hcl, "json": json} {
		a := cfg.Audit
		if a == nil || a.Key != "k-0123456789abcdef" || a.SigningKey != "c2VlZA==" || a.PublicKey != "cHVi" || a.CheckpointEvery != 50 ||
			!filepath.IsAbs(a.CheckpointPath) || !strings.HasSuffix(a.CheckpointPath, filepath.Join("cp", "audit.checkpoints")) {
			t.Fatalf("%s: %+v", name, a)
		}
		out, _, err := Compile(cfg, FormatNexusJSON)
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		if strings.Contains(s, "k-0123456789abcdef") || strings.Contains(s, "c2VlZA==") || !strings.Contains(s, `"key": "${AUDIT_KEY}"`) || !strings.Contains(s, `"checkpoint_every": 50`) {
			t.Errorf("%s: compiled:\n%s", name, s)
		}
	}
	lit := mustLoad(t, "nexus.hcl", "audit {\n  path = \"a.jsonl\"\n  key = \"written-in-the-file-0123\"\n}\n", nil)
	out, warns, err := Compile(lit, FormatNexusJSON)
	if err != nil || strings.Contains(string(out), "written-in-the-file-0123") || len(warns) == 0 || !strings.Contains(warns[len(warns)-1].Message, "sensitive variable") {
		t.Errorf("a literal key: %s %v %v", out, warns, err)
	}
	if _, err := loadOne(t, "nexus.hcl", "audit {\n  path = \"a.jsonl\"\n  checkpoint_evry = 5\n}\n", nil); err == nil || !strings.Contains(errText(err), "checkpoint_every") {
		t.Errorf("a misspelt key: %v", err)
	}
}
