package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra/doc"
)

var manDir = flag.String("man", "", "write the man pages here (make man)")

// TestManPages generates a man page for every command from the command
// tree (make man writes them to bin/man; here they go to a temporary
// folder), so the pages cannot drift from the commands.
func TestManPages(t *testing.T) {
	dir := *manDir
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	root := a.rootCmd()
	a.finishCommands(root)
	root.DisableAutoGenTag = true // no date: the same tree gives the same pages
	if err := doc.GenManTree(root, &doc.GenManHeader{Title: "NEXUS", Section: "1", Source: "Nexus", Manual: "Nexus Manual"}, dir); err != nil {
		t.Fatal(err)
	}
	for _, page := range []string{"nexus.1", "nexus-call.1", "nexus-serve.1", "nexus-config-init.1", "nexus-approvals-revoke.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(string(b), ".SH NAME") {
			t.Errorf("%s: %v", page, err)
		}
	}
}
