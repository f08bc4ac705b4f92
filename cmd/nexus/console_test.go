package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/testenv"
)

// When the MCP listener fails after the console started, serve stops the
// console and exits with the listener's error, rather than waiting on the
// console forever. The 60 s bound is only against that hang.
func TestServeConsoleStopsWithServe(t *testing.T) {
	bin := testenv.Nexus(t)
	dir := t.TempDir()
	hcl := "variable \"admin\" {\n  sensitive = true\n  env = \"ADMIN\"\n}\nconsole {\n  tokens = [var.admin]\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "nexus.hcl"), []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", "nexus.hcl", "--agent", "cli", "--listen", "127.0.0.1:99999", "--console", "127.0.0.1:0")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "ADMIN=admin-0123456789abcdef"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("serve did not exit after its listener failed; stderr:\n%s", stderr.String())
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitConnection {
		t.Errorf("exit: %v, want %d", err, exitConnection)
	}
	if !strings.Contains(stderr.String(), "nexus: serving the console at http://127.0.0.1:") || strings.Contains(stderr.String(), "admin-0123456789abcdef") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
