package diag

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTryByHandSurvivesTheShell: the curl line a report prints, pasted
// into a POSIX shell, hands curl the URL that failed, whole. A masked URL
// keeps its query's & (the CLI's connection report once printed it bare,
// so the shell ran "curl -i http://...?api_key=***" in the background and
// "region=eu" as a command).
func TestTryByHandSurvivesTheShell(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("a POSIX shell is needed to check the quoting: %v", err)
	}
	for _, u := range []string{
		"http://127.0.0.1:9/mcp",
		"http://ada:***@127.0.0.1:9/mcp?api_key=***&region=eu",
		"http://127.0.0.1:9/it's/a (test)/$HOME/`id`/;|<>",
	} {
		fix := TryByHand(u)
		line, ok := strings.CutPrefix(fix, "Test the endpoint by hand:\n")
		if !ok || strings.Contains(line, "\n") {
			t.Fatalf("fix is not a heading and one command line:\n%s", fix)
		}
		// The line with curl replaced by printf, so the shell's words
		// come back one a line instead of being sent anywhere.
		script := "printf '%s\\n' " + strings.TrimPrefix(line, "curl ")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, sh, "-c", script).Output()
		cancel()
		if err != nil {
			t.Fatalf("%s: the shell refused the line: %v\n%s", u, err, line)
		}
		words := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		if len(words) < 4 || words[0] != "-i" || words[1] != "-X" || words[2] != "POST" || words[3] != u {
			t.Errorf("the shell split %q into %q", line, words)
		}
		if words[len(words)-1] != initializeRequest {
			t.Errorf("the request body came out as %q", words[len(words)-1])
		}
	}
}
