package config

import (
	"strings"
	"testing"
	"time"
)

// A sampling block decodes with its defaults, keeps its key a reference,
// and goes through nexus-json and back unchanged.
func TestSamplingBlock(t *testing.T) {
	src := `variable "model_key" { sensitive = true }
sampling {
  url        = "http://127.0.0.1:11434/v1"
  model      = "llama3.1"
  api_key    = var.model_key
  servers    = ["testserver", "gh*"]
  per_minute = 3
  confirm    = false
}
server "testserver" {
  stdio { command = "nexus" }
}
`
	cfg, err := loadOne(t, "nexus.hcl", src, env("MODEL_KEY", "sk-SECRET"))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Sampling
	if s == nil || s.URL != "http://127.0.0.1:11434/v1" || s.Model != "llama3.1" || s.APIKey != "sk-SECRET" || s.PerMinute != 3 ||
		s.MaxTokens != DefaultSamplingMaxTokens || s.Timeout != 60*time.Second || s.Confirm || len(s.Servers) != 2 {
		t.Fatalf("sampling %+v", s)
	}
	out, _, err := Compile(cfg, FormatNexusJSON)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "sk-SECRET") || !strings.Contains(string(out), `"api_key": "${MODEL_KEY}"`) {
		t.Errorf("nexus-json:\n%s", out)
	}
	back, err := loadOne(t, "nexus.json", string(out), env("MODEL_KEY", "sk-SECRET"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b := back.Sampling; b == nil || b.APIKey != "sk-SECRET" || b.PerMinute != 3 || b.Confirm || b.Model != s.Model {
		t.Errorf("back from nexus-json: %+v", b)
	}
	if _, warns, _ := Compile(cfg, FormatMCPServers); !strings.Contains(warnText(warns), "sampling block cannot be expressed") {
		t.Errorf("mcpservers warnings: %v", warns)
	}
}

func TestSamplingErrors(t *testing.T) {
	for name, src := range map[string]string{
		"bad_url":   "sampling {\n  url = \"ollama:11434\"\n  model = \"m\"\n  servers = [\"a\"]\n}\n",
		"no_server": "sampling {\n  url = \"http://127.0.0.1:1/v1\"\n  model = \"m\"\n  servers = []\n}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadOne(t, "nexus.hcl", src, nil)
			if err == nil {
				t.Fatal("loaded")
			}
			golden(t, "sampling_"+name, errText(err))
		})
	}
}

func warnText(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.String() + "\n")
	}
	return b.String()
}

// A lock block decodes in both syntaxes; anything but block or warn is an
// error at the value.
func TestLockBlock(t *testing.T) {
	cfg, err := loadOne(t, "nexus.hcl", "lock {\n  on_new = \"warn\"\n}\n", nil)
	if err != nil || cfg.Lock == nil || cfg.Lock.OnNew != LockWarn || cfg.Lock.OnChange != LockBlock {
		t.Fatalf("%+v %v", cfg.Lock, err)
	}
	cfg, err = loadOne(t, "nexus.json", `{"lock": {"on_change": "warn"}}`, nil)
	if err != nil || cfg.Lock == nil || cfg.Lock.OnChange != LockWarn || cfg.Lock.OnNew != LockBlock {
		t.Fatalf("json: %+v %v", cfg.Lock, err)
	}
	if _, err := loadOne(t, "nexus.hcl", "lock {\n  on_change = \"allow\"\n}\n", nil); err == nil || !strings.Contains(err.Error(), `on_change "allow" is not "block"`) {
		t.Errorf("a bad action: %v", err)
	}
}
