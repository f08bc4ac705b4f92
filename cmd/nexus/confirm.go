package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"golang.org/x/term"

	"github.com/nexus-mcp/nexus/host/policy"
	"github.com/nexus-mcp/nexus/host/sanitize"
)

// confirmer answers the host's confirmation questions: --yes approves
// everything; on a terminal a person is asked; otherwise nobody can be
// asked and the host denies, naming --yes.
func (a *app) confirmer() policy.Confirmer {
	if a.yes {
		return policy.AllowAll{}
	}
	f, ok := a.stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &terminalConfirm{in: bufio.NewReader(f), out: a.stderr}
}

type terminalConfirm struct {
	mu  sync.Mutex // one question at a time
	in  *bufio.Reader
	out io.Writer
}

func (t *terminalConfirm) Confirm(ctx context.Context, r policy.ConfirmRequest) (policy.Answer, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	what := r.Method
	if r.Tool != "" {
		what = "tool " + r.Server + "." + r.Tool
	}
	fmt.Fprintf(t.out, "Agent %q wants to use server %q (%s).\n", r.Agent, r.Server, sanitize.ForDisplay(what))
	if len(r.Arguments) > 0 && len(r.Arguments) < 2000 {
		fmt.Fprintf(t.out, "  arguments: %s\n", sanitize.ForDisplay(string(r.Arguments)))
	}
	for {
		fmt.Fprint(t.out, "Allow? [y]es, [n]o, [a]lways for this server: ")
		line, err := t.in.ReadString('\n')
		if err != nil {
			fmt.Fprintln(t.out)
			return policy.No, errors.New("the terminal closed before an answer")
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return policy.Yes, nil
		case "a", "always":
			return policy.Always, nil
		case "n", "no", "":
			return policy.No, nil
		}
	}
}
