package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/suggest"
)

// The interactive shell keeps one host, and so its connections, open
// across commands. Its commands are the seed's REPL commands (/mcp ...)
// plus the verbs of the command line as /call, /read and /prompt.

const shellHelp = `Commands:
  /mcp                                      configured servers and their connections
  /mcp connect <name> [--allow-all] [--shared]
                                            connect a server; --allow-all approves its tools without
                                            asking, --shared lets every agent use the connection
  /mcp disconnect <name>                    close a server's connection
  /mcp tools [server]                       list tools
  /mcp resources [server]                   list resources
  /mcp templates [server]                   list resource templates
  /mcp prompts [server]                     list prompts
  /mcp retry <name>                         list a server's tools again (after tools/list failed)
  /call <server.tool> [key=value ...]       call a tool (values take the types its schema gives; k:=v is JSON)
  /read <server> <uri>                      read a resource
  /prompt <server.prompt> [key=value ...]   get a prompt
  /loglevel <level>                         servers' log messages shown from this level up (debug, info,
                                            notice, warning, error, ...); servers are told (logging/setLevel)
  /clear                                    clear the screen
  /cd [dir]                                 change the working directory (the servers' root)
  /pwd                                      print the working directory
  /help                                     this list
  /quit                                     leave (or Ctrl-D)
Tab completes commands, server names and tool names; Up and Down walk the history.
Ctrl-C stops the running command; at the prompt it clears the line.`

var shellCommands = []string{"/mcp", "/call", "/read", "/prompt", "/loglevel", "/clear", "/cd", "/pwd", "/help", "/quit", "/exit"}
var mcpSubcommands = []string{"connect", "disconnect", "tools", "resources", "templates", "prompts", "retry"}

func (a *app) shellCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "shell",
		Short: "An interactive shell that keeps server connections open (/help lists its commands)",
		Long: `An interactive shell that keeps server connections open between commands.

` + shellHelp + `

History is kept in ~/.nexus/shell_history (NEXUS_HISTORY names another file; NEXUS_HISTORY=off
keeps none).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.runShell(cmd.Context()) },
	}
}

const shellPrompt = "nexus> "

// shell is one interactive session.
type shell struct {
	a  *app
	h  *host.Host
	ln *liner.State

	mu    sync.Mutex // guards the completion cache
	tools map[string][]string
	// prompts and resources are filled by the listings the person runs.
	prompts   map[string][]string
	resources map[string][]string
}

// linerLines asks the console's questions (confirmation, sampling,
// elicitation) through the line editor while a command runs. The editor
// owns the terminal's mode, so reading the terminal any other way would
// not echo.
type linerLines struct {
	ln   *liner.State
	mu   sync.Mutex
	idle bool // at the shell prompt: the editor is busy, nobody can answer
}

func (l *linerLines) readLine(ctx context.Context, prompt string) (string, error) {
	l.mu.Lock()
	idle := l.idle
	l.mu.Unlock()
	if idle {
		return "", io.EOF
	}
	s, err := l.ln.Prompt(prompt)
	switch {
	case errors.Is(err, liner.ErrPromptAborted):
		return "", errAborted
	case err != nil:
		return "", io.EOF
	case ctx.Err() != nil:
		return "", ctx.Err()
	}
	return s, nil
}

func (l *linerLines) setIdle(v bool) {
	l.mu.Lock()
	l.idle = v
	l.mu.Unlock()
}

func (a *app) runShell(ctx context.Context) error {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	ln.SetTabCompletionStyle(liner.TabPrints)

	con := a.console()
	var lines *linerLines
	if con.canAsk() {
		lines = &linerLines{ln: ln, idle: true}
		con.lines = lines
	}
	sh := &shell{a: a, ln: ln, tools: map[string][]string{}, prompts: map[string][]string{}, resources: map[string][]string{}}
	a.onChange = sh.changed
	h, err := a.openHost()
	if err != nil {
		return err
	}
	defer h.Close()
	sh.h = h
	ln.SetWordCompleter(sh.complete)

	hist := historyFile()
	if hist != "" {
		if f, err := os.Open(hist); err == nil {
			ln.ReadHistory(f)
			f.Close()
		}
	}
	defer func() {
		if hist == "" {
			return
		}
		os.MkdirAll(filepath.Dir(hist), 0o700)
		if f, err := os.OpenFile(hist, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600); err == nil {
			ln.WriteHistory(f)
			f.Close()
		}
	}()

	// Ctrl-C while a command runs cancels that command only.
	var (
		cmdMu     sync.Mutex
		cmdCancel context.CancelFunc
	)
	old := a.setInterrupt(func() {
		cmdMu.Lock()
		defer cmdMu.Unlock()
		if cmdCancel != nil {
			cmdCancel()
		}
	})
	defer func() { a.setInterrupt(old) }() // restore the previous handler

	names := h.Config().Names()
	fmt.Fprintf(a.stdout, "Nexus %s shell: %s configured (%s). /help lists the commands, Ctrl-D leaves.\n",
		host.Version, count(len(names), "server"), strings.Join(names, ", "))
	for {
		con.setPrompt(shellPrompt)
		line, err := ln.Prompt(shellPrompt)
		con.setPrompt("")
		switch {
		case errors.Is(err, liner.ErrPromptAborted):
			continue
		case errors.Is(err, io.EOF):
			fmt.Fprintln(a.stdout)
			return nil
		case err != nil:
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ln.AppendHistory(line)
		cctx, cancel := context.WithCancel(ctx)
		cmdMu.Lock()
		cmdCancel = cancel
		cmdMu.Unlock()
		if lines != nil {
			lines.setIdle(false)
		}
		quit := sh.run(cctx, line)
		if lines != nil {
			lines.setIdle(true)
		}
		cmdMu.Lock()
		cmdCancel = nil
		cmdMu.Unlock()
		interrupted := cctx.Err() != nil && ctx.Err() == nil
		cancel()
		if interrupted {
			con.setBar("")
			fmt.Fprintln(a.stderr, "interrupted")
		}
		if quit || ctx.Err() != nil {
			return nil
		}
	}
}

// historyFile is where the shell keeps its history, "" for none.
func historyFile() string {
	if v, ok := os.LookupEnv("NEXUS_HISTORY"); ok {
		if v == "off" || v == "" {
			return ""
		}
		return v
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".nexus", "shell_history")
}

// run executes one line and reports whether the shell should end.
func (sh *shell) run(ctx context.Context, line string) (quit bool) {
	a := sh.a
	words, err := splitWords(line)
	if err != nil {
		sh.fail(usageErr("%v", err))
		return false
	}
	a.target = ""
	cmd, args := words[0], words[1:]
	switch cmd {
	case "/quit", "/exit":
		return true
	case "/help", "/?":
		fmt.Fprintln(a.stdout, shellHelp)
	case "/clear":
		fmt.Fprint(a.stdout, "\x1b[H\x1b[2J")
	case "/loglevel":
		sh.fail(sh.logLevel(ctx, args))
	case "/mcp":
		sh.fail(sh.mcp(ctx, args))
	case "/call":
		if len(args) == 0 {
			sh.fail(usageErr("/call needs a tool: /call server.tool key=value ..."))
			return false
		}
		if !strings.Contains(args[0], ".") && !strings.HasPrefix(args[0], "mcp_") {
			sh.fail(usageErr("%q is not SERVER.TOOL (for example testserver.echo)", args[0]))
			return false
		}
		toolArgs, err := parseArgs(args[1:], "")
		if err != nil {
			sh.fail(err)
			return false
		}
		sh.fail(a.call(ctx, sh.h, args[0], toolArgs))
	case "/read":
		if len(args) != 2 {
			sh.fail(usageErr("/read needs a server and a URI: /read testserver file:///readme.txt"))
			return false
		}
		sh.fail(a.read(ctx, sh.h, args[0], args[1]))
	case "/prompt":
		if len(args) == 0 {
			sh.fail(usageErr("/prompt needs a prompt: /prompt server.prompt key=value ..."))
			return false
		}
		server, name, pargs, err := promptArgs(args)
		if err != nil {
			sh.fail(err)
			return false
		}
		sh.fail(a.prompt(ctx, sh.h, server, name, pargs))
	case "/cd":
		sh.fail(sh.cd(ctx, args))
	case "/pwd":
		dir, err := os.Getwd()
		if err != nil {
			sh.fail(err)
			return false
		}
		fmt.Fprintln(a.stdout, clean(dir))
	default:
		msg := fmt.Sprintf("unknown command %q", cmd)
		if !strings.HasPrefix(cmd, "/") {
			msg += "; shell commands start with / (/help lists them)"
		} else if near := suggest.Nearest(cmd, shellCommands); near != "" {
			msg += fmt.Sprintf("; did you mean %s?", near)
		} else {
			msg += " (/help lists the commands)"
		}
		sh.fail(errors.New(msg))
	}
	return false
}

// fail prints an error the way the command line does; the shell goes on.
func (sh *shell) fail(err error) {
	if err == nil {
		return
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.code == exitToolError {
			return // the result, with isError, is already printed
		}
		err = ee.err
	}
	if errors.Is(err, context.Canceled) {
		return // Ctrl-C: "interrupted" is printed by the loop
	}
	renderAll(sh.a.stderr, sh.a.explainErr(err))
}

func (sh *shell) mcp(ctx context.Context, args []string) error {
	a, h := sh.a, sh.h
	if len(args) == 0 {
		sh.status()
		return nil
	}
	sub, rest := args[0], args[1:]
	oneServer := func() (string, error) {
		if len(rest) != 1 {
			return "", usageErr("/mcp %s needs one server name", sub)
		}
		if h.Config().Server(rest[0]) == nil {
			return "", &host.UnknownServerError{Name: rest[0], Known: h.Config().Names()}
		}
		return rest[0], nil
	}
	optServer := func() (string, error) {
		if len(rest) > 1 {
			return "", usageErr("/mcp %s takes at most one server name", sub)
		}
		if len(rest) == 1 {
			return rest[0], nil
		}
		return "", nil
	}
	switch sub {
	case "connect":
		var name string
		allowAll, shared := false, false
		for _, w := range rest {
			switch {
			case w == "--allow-all":
				allowAll = true
			case w == "--shared":
				shared = true
			case strings.HasPrefix(w, "-"):
				return usageErr("/mcp connect: unknown option %q (use --allow-all, --shared)", w)
			case name != "":
				return usageErr("/mcp connect takes one server name")
			default:
				name = w
			}
		}
		if name == "" {
			return usageErr("/mcp connect needs a server name")
		}
		if h.Config().Server(name) == nil {
			return &host.UnknownServerError{Name: name, Known: h.Config().Names()}
		}
		a.target = name
		if err := h.Connect(ctx, a.agent, name, shared); err != nil {
			return err
		}
		if allowAll && a.confirm != nil {
			a.confirm.allow(name)
		}
		for _, s := range h.Servers() {
			if s.Config.Name == name && s.Connected {
				fmt.Fprintf(a.stdout, "connected to %s: %s, protocol %s, %s%s\n", name,
					clean(strings.TrimSpace(s.Info.Name+" "+s.Info.Version)), s.Version, count(s.Tools, "tool"), connectNotes(allowAll, shared))
			}
		}
		return nil
	case "disconnect":
		name, err := oneServer()
		if err != nil {
			return err
		}
		h.Disconnect(name)
		sh.changed(name)
		fmt.Fprintf(a.stdout, "disconnected %s\n", name)
		return nil
	case "retry":
		name, err := oneServer()
		if err != nil {
			return err
		}
		a.target = name
		if err := h.RetryTools(ctx, a.agent, name); err != nil {
			return err
		}
		sh.changed(name)
		for _, s := range h.Servers() {
			if s.Config.Name == name {
				fmt.Fprintf(a.stdout, "%s: %s\n", name, count(s.Tools, "tool"))
			}
		}
		return nil
	case "tools":
		server, err := optServer()
		if err != nil {
			return err
		}
		tools, err := a.listTools(ctx, h, server)
		sh.cacheTools(tools)
		return err
	case "resources":
		server, err := optServer()
		if err != nil {
			return err
		}
		rows, err := a.listResources(ctx, h, server)
		sh.mu.Lock()
		for _, r := range rows {
			sh.resources[r.Server] = appendNew(sh.resources[r.Server], r.URI)
		}
		sh.mu.Unlock()
		return err
	case "templates":
		server, err := optServer()
		if err != nil {
			return err
		}
		return a.listTemplates(ctx, h, server)
	case "prompts":
		server, err := optServer()
		if err != nil {
			return err
		}
		rows, err := a.listPrompts(ctx, h, server)
		sh.mu.Lock()
		for _, p := range rows {
			sh.prompts[p.Server] = appendNew(sh.prompts[p.Server], p.Name)
		}
		sh.mu.Unlock()
		return err
	}
	msg := fmt.Sprintf("unknown /mcp command %q", sub)
	if near := suggest.Nearest(sub, mcpSubcommands); near != "" {
		msg += fmt.Sprintf("; did you mean /mcp %s?", near)
	}
	return usageErr("%s (/help lists the commands)", msg)
}

func connectNotes(allowAll, shared bool) string {
	var n []string
	if allowAll {
		n = append(n, "its tools are approved without asking")
	}
	if shared {
		n = append(n, "shared with every agent")
	}
	if len(n) == 0 {
		return ""
	}
	return " (" + strings.Join(n, ", ") + ")"
}

// status is /mcp: every configured server and its connection.
func (sh *shell) status() {
	var rows [][2]string
	for _, s := range sh.h.Servers() {
		c := s.Config
		state := "not connected"
		switch {
		case !c.Enabled:
			state = "disabled"
		case s.Connected:
			state = fmt.Sprintf("connected: %s, %s", strings.TrimSpace(s.Info.Name+" "+s.Info.Version), count(s.Tools, "tool"))
			if s.Shared {
				state += ", shared"
			}
		case s.Err != nil:
			state = "failed: " + firstLine(s.Err.Error())
		}
		rows = append(rows, [2]string{c.Name, fmt.Sprintf("%-6s %s  (%s)", c.Type, state, c.Source)})
	}
	if len(rows) == 0 {
		fmt.Fprintln(sh.a.stdout, "no servers configured")
		return
	}
	sh.a.printTable(rows)
}

// cd changes the working directory. When the config names no roots the
// directory is the servers' root, so they are told it changed.
func (sh *shell) cd(ctx context.Context, args []string) error {
	a := sh.a
	if len(args) > 1 {
		return usageErr("/cd takes one directory")
	}
	dir := ""
	if len(args) == 1 {
		dir = args[0]
	}
	if dir == "" || dir == "~" || strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return err
		}
		dir = filepath.Join(home, strings.TrimPrefix(strings.TrimPrefix(dir, "~"), "/"))
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	fmt.Fprintln(a.stdout, clean(wd))
	if len(sh.h.Config().Roots()) > 0 {
		fmt.Fprintln(a.stdout, "(the config sets the roots, so they stay as they are)")
		return nil
	}
	// notifications/roots/list_changed to every connected server, when the
	// host can send it.
	if rc, ok := any(sh.h).(interface {
		RootsChanged(context.Context) error
	}); ok {
		if err := rc.RootsChanged(ctx); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "root is now %s; connected servers were told\n", fileURI(wd))
		return nil
	}
	fmt.Fprintf(a.stdout, "root is now %s (servers see it the next time they ask for roots)\n", fileURI(wd))
	return nil
}

// changed drops what the completion cache knows about server.
func (sh *shell) changed(server string) {
	sh.mu.Lock()
	delete(sh.tools, server)
	delete(sh.prompts, server)
	delete(sh.resources, server)
	sh.mu.Unlock()
}

func (sh *shell) cacheTools(tools []host.Tool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, t := range tools {
		sh.tools[t.Server] = appendNew(sh.tools[t.Server], t.Tool.Name)
	}
}

// toolNames are the tools of server for completion: from the cache, else
// listed once (briefly, and only when the server is connected).
func (sh *shell) toolNames(server string) []string {
	sh.mu.Lock()
	names, ok := sh.tools[server]
	sh.mu.Unlock()
	if ok {
		return names
	}
	connected := false
	for _, s := range sh.h.Servers() {
		if s.Config.Name == server && s.Connected {
			connected = true
		}
	}
	if !connected {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	tools, _ := sh.h.Tools(ctx, sh.a.agent)
	sh.cacheTools(tools)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.tools[server]
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// complete is the line editor's word completer.
func (sh *shell) complete(line string, pos int) (head string, completions []string, tail string) {
	before, tail := line[:pos], line[pos:]
	start := strings.LastIndexAny(before, " \t") + 1
	head, word := before[:start], before[start:]
	fields := strings.Fields(head)
	var cands []string
	switch {
	case len(fields) == 0:
		cands = shellCommands
	case fields[0] == "/mcp" && len(fields) == 1:
		cands = mcpSubcommands
	case fields[0] == "/mcp" && len(fields) == 2:
		cands = sh.serverNames("")
	case fields[0] == "/mcp" && fields[1] == "connect":
		cands = []string{"--allow-all", "--shared"}
	case (fields[0] == "/call" || fields[0] == "/prompt") && len(fields) == 1:
		server, _, hasDot := strings.Cut(word, ".")
		if !hasDot {
			cands = sh.serverNames(".")
			break
		}
		var names []string
		if fields[0] == "/call" {
			names = sh.toolNames(server)
		} else {
			sh.mu.Lock()
			names = sh.prompts[server]
			sh.mu.Unlock()
		}
		for _, n := range names {
			cands = append(cands, server+"."+n)
		}
	case fields[0] == "/read" && len(fields) == 1:
		cands = sh.serverNames("")
	case fields[0] == "/read" && len(fields) == 2:
		sh.mu.Lock()
		cands = sh.resources[fields[1]]
		sh.mu.Unlock()
	case fields[0] == "/cd":
		cands = dirNames(word)
	}
	for _, c := range cands {
		if strings.HasPrefix(c, word) {
			completions = append(completions, c)
		}
	}
	sort.Strings(completions)
	// A single server name ending in "." or a directory goes on without a
	// space; anything else gets one.
	if len(completions) == 1 && !strings.HasSuffix(completions[0], ".") && !strings.HasSuffix(completions[0], "/") {
		completions[0] += " "
	}
	return head, completions, tail
}

func (sh *shell) serverNames(suffix string) []string {
	var out []string
	for _, s := range sh.h.Config().Servers() {
		out = append(out, s.Name+suffix)
	}
	return out
}

// dirNames completes a directory path.
func dirNames(word string) []string {
	dir, prefix := filepath.Split(word)
	read := dir
	if read == "" {
		read = "."
	}
	entries, err := os.ReadDir(read)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && (prefix != "" || !strings.HasPrefix(e.Name(), ".")) {
			out = append(out, dir+e.Name()+"/")
		}
	}
	return out
}

// splitWords splits a shell line into words: spaces separate, single and
// double quotes group, a backslash escapes the next character (not inside
// single quotes).
func splitWords(line string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool // a word has started (so "" is a word)
		quote rune
	)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs) && (rs[i+1] == '"' || rs[i+1] == '\\'):
				i++
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == '\\':
			if i+1 < len(rs) {
				i++
				cur.WriteRune(rs[i])
				in = true
			}
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}

// logLevel sets the level from which servers' log messages show, here and
// at the servers (logging/setLevel).
func (sh *shell) logLevel(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return usageErr("/loglevel needs a level: one of %v", mcp.LoggingLevels)
	}
	level := mcp.LoggingLevel(strings.ToLower(args[0]))
	if level.Severity() < 0 {
		return usageErr("unknown log level %q: one of %v", args[0], mcp.LoggingLevels)
	}
	err := sh.h.SetLogLevel(ctx, sh.a.agent, level)
	sh.a.levelMu.Lock()
	sh.a.shown = mcpToHclog(level)
	sh.a.levelMu.Unlock()
	fmt.Fprintf(sh.a.stdout, "Servers' log messages from %s up are shown.\n", level)
	return err
}
