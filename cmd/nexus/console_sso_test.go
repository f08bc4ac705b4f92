package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// The console's single sign-on does not start half set up: without the
// role mapping, or without the gateway's OAuth issuer to log in at,
// nexus serve stops and says what to add.
func TestServeConsoleSSOErrors(t *testing.T) {
	for _, c := range []struct{ name, console string }{
		{"err_serve_console_sso_no_roles", "console {\n  oidc_client_id = \"nexus-console\"\n}\n"},
		{"err_serve_console_sso_no_issuer", "console {\n  oidc_client_id = \"nexus-console\"\n  role_claim     = \"nexus_console_role\"\n  admin_roles    = [\"console-admin\"]\n}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := testenv.Nexus(t)
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(c.console), 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"--config", "nexus.hcl", "serve", "--agent", "cli", "--listen", "127.0.0.1:0", "--console", "127.0.0.1:0"}
			cmd := exec.Command(bin, args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitUsage {
				t.Errorf("nexus serve: %v, want exit %d\n%s", err, exitUsage, errb.String())
			}
			golden(t, c.name, "$ nexus "+quoteArgs(args)+"\n--- stdout\n"+out.String()+"--- stderr\n"+errb.String())
		})
	}
}
