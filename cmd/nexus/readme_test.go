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

// useLines are the command lines of the shell blocks in README.md's "Use"
// section, each without its comment, and whether the comment marks it as
// needing a terminal ("(terminal)").
func useLines(t *testing.T) (lines []string, terminal []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.Root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, use, ok := strings.Cut(string(raw), "\n## Use\n")
	if !ok {
		t.Fatal(`README.md has no "## Use" section`)
	}
	use, _, _ = strings.Cut(use, "\n## ")
	for _, part := range strings.Split(use, "```sh\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		for _, l := range strings.Split(block, "\n") {
			cmd, comment, _ := strings.Cut(l, " #")
			cmd = strings.TrimSpace(cmd)
			if cmd == "" || strings.HasPrefix(cmd, "#") {
				continue // blank, or a comment going on from the line before
			}
			if strings.Contains(comment, "(terminal)") {
				terminal = append(terminal, cmd)
			} else {
				lines = append(lines, cmd)
			}
		}
	}
	return lines, terminal
}

// TestReadmeUse runs every shell line of README.md's "Use" section as a
// reader would paste it, in an empty directory with an empty home (so the
// built-in default config serves), and wants exit 0: a line that needs a
// terminal says so in its comment, "(terminal)" (issue 42). Without a
// terminal nexus call takes --yes, as the README says above the block.
func TestReadmeUse(t *testing.T) {
	lines, terminal := useLines(t)
	if len(lines) < 10 || len(terminal) == 0 {
		t.Fatalf("%d lines to run and %d marked (terminal): the README's Use section was not found whole", len(lines), len(terminal))
	}
	bin := testenv.Nexus(t)
	for _, l := range lines {
		t.Run(strings.Fields(l)[1], func(t *testing.T) {
			run := l
			if strings.HasPrefix(run, "nexus call ") {
				run = "nexus call --yes " + strings.TrimPrefix(run, "nexus call ")
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-c", run)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin", "HOME=" + dir}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("%s: %v\n%s", run, err, out.String())
			}
		})
	}
}
