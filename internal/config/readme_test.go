package config

import (
	"os"
	"strings"
	"testing"
)

// The README's gateway example loads as written, and says what it shows:
// its limits, per agent and global, are the ones the gateway gets.
func TestReadmeGatewayExample(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var block string
	for _, part := range strings.Split(string(raw), "```hcl\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		if strings.Contains(body, "max_sessions_per_agent") {
			block = body
			break
		}
	}
	if block == "" {
		t.Fatal("README.md has no hcl block with the gateway's limits")
	}
	// The block's TLS files are the reader's; they need not exist to load.
	cfg := mustLoad(t, "nexus.hcl", block, env("CLAUDE_TOKEN", "0123456789abcdef0123"))
	l := cfg.Gateway.Limits
	if l.MaxSessions != 1000 || l.MaxSessionsPerAgent != 100 || l.MaxRequestsPerAgent != 1024 || l.MaxInflightBytes != 512<<20 ||
		l.MaxInflightBytesPerAgent != 128<<20 || l.MaxUpstreamSessionsPerAgent != 8 {
		t.Errorf("limits %+v", l)
	}
}
