package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// confirmer answers the host's confirmation questions: --yes approves
// everything; on a terminal a person is asked; otherwise nobody can be
// asked and the host denies, naming --yes.
func (a *app) confirmer() host.Confirmer {
	if a.yes {
		return host.AllowAll{}
	}
	con := a.console()
	if !con.canAsk() {
		return nil
	}
	if a.confirm == nil {
		a.confirm = &terminalConfirm{con: con}
	}
	return a.confirm
}

// terminalConfirm asks through the console, so a question never
// interleaves with a sampling or elicitation prompt. Servers in allowAll
// (the shell's /mcp connect --allow-all) are approved without asking.
type terminalConfirm struct {
	con *console

	mu       sync.Mutex
	allowAll map[string]bool
}

// allow approves every later use of server without asking.
func (t *terminalConfirm) allow(server string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.allowAll == nil {
		t.allowAll = map[string]bool{}
	}
	t.allowAll[server] = true
}

func (t *terminalConfirm) Confirm(ctx context.Context, r host.ConfirmRequest) (host.Answer, error) {
	t.mu.Lock()
	all := t.allowAll[r.Server]
	t.mu.Unlock()
	if all {
		return host.AnswerYes, nil // approved for this shell only, never remembered
	}
	c := t.con
	c.begin()
	defer c.end()
	what := r.Method
	if r.Tool != "" {
		what = "tool " + r.Server + "." + r.Tool
	}
	c.say("Agent %q wants to use server %q (%s).\n", r.Agent, r.Server, sanitize.ForDisplay(what))
	if len(r.Arguments) > 0 && len(r.Arguments) < 2000 {
		c.say("  arguments: %s\n", sanitize.ForDisplay(string(r.Arguments)))
	}
	question := "Allow? [y]es, [n]o, [a]lways for this server: "
	if r.Tool != "" {
		question = "Allow? [y]es, [n]o, [a]lways for this server, [t]his tool always: "
	}
	for {
		line, err := c.read(ctx, question)
		switch {
		case errors.Is(err, io.EOF):
			return host.AnswerNo, errors.New("the terminal closed before an answer")
		case errors.Is(err, errAborted):
			return host.AnswerNo, nil
		case err != nil:
			return host.AnswerNo, fmt.Errorf("no answer: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return host.AnswerYes, nil
		case "a", "always":
			return host.AnswerAlways, nil
		case "t", "tool":
			if r.Tool != "" {
				return host.AnswerAlwaysTool, nil
			}
		case "n", "no", "":
			return host.AnswerNo, nil
		}
	}
}
