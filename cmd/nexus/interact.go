package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/term"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// The console is the person at the terminal. Everything that is not a
// command's result goes to stderr through it: progress, server log
// messages, and the questions servers and policies ask (confirmation,
// sampling, elicitation), one at a time, so that a progress bar never
// draws over a question and two questions never interleave.

// lineReader reads one line of an answer. readLine returns io.EOF when the
// terminal is gone and errAborted when the person pressed Ctrl-C at the
// prompt (only a line editor can tell).
type lineReader interface {
	readLine(ctx context.Context, prompt string) (string, error)
}

var errAborted = errors.New("aborted at the prompt")

type console struct {
	out    io.Writer // stderr
	outTTY bool      // out is a terminal: progress is a bar redrawn in place
	lines  lineReader

	ask sync.Mutex // held for the whole of one question

	mu     sync.Mutex // guards what follows
	bar    string     // the status line on screen, "" if none
	asking bool       // a question is on screen: no bar until it is answered
	prompt string     // the shell's prompt while it waits for a command, "" otherwise
}

// setPrompt tells the console the shell's prompt is on screen (p) or not
// (""), so a log line that arrives meanwhile goes above it.
func (c *console) setPrompt(p string) {
	c.mu.Lock()
	c.prompt = p
	c.mu.Unlock()
}

// console returns the app's console, made on first use: a person can be
// asked only when stdin is a terminal.
func (a *app) console() *console {
	a.conOnce.Do(func() {
		if a.con != nil {
			return // the shell installed its own
		}
		c := &console{out: a.stderr, outTTY: isTerminal(a.stderr)}
		if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			c.lines = &stdinLines{out: a.stderr, r: bufio.NewReader(f)}
		}
		a.con = c
	})
	return a.con
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// canAsk reports whether there is a person to ask.
func (c *console) canAsk() bool { return c.lines != nil }

// begin starts a question: the bar is cleared and stays off until end.
func (c *console) begin() {
	c.ask.Lock()
	c.mu.Lock()
	c.clearBar()
	c.asking = true
	c.mu.Unlock()
}

func (c *console) end() {
	c.mu.Lock()
	c.asking = false
	c.drawBar()
	c.mu.Unlock()
	c.ask.Unlock()
}

// say writes text inside a question (begin was called).
func (c *console) say(format string, args ...any) {
	fmt.Fprintf(c.out, format, args...)
}

// read asks for one line inside a question.
func (c *console) read(ctx context.Context, prompt string) (string, error) {
	if c.lines == nil {
		return "", io.EOF
	}
	return c.lines.readLine(ctx, prompt)
}

// printLine writes one line (a server log message) above the bar, or,
// while the shell waits for a command, above its prompt: the prompt's line
// is cleared, the message written, and the prompt drawn again (what was
// typed shows again at the next key: the line editor redraws it).
func (c *console) printLine(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outTTY && c.prompt != "" {
		io.WriteString(c.out, "\r\x1b[2K"+s+"\n"+c.prompt)
		return
	}
	c.clearBar()
	io.WriteString(c.out, s+"\n")
	c.drawBar()
}

// setBar shows s as the status line ("" removes it). Without a terminal
// there is no status line.
func (c *console) setBar(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearBar()
	c.bar = s
	c.drawBar()
}

// clearBar and drawBar are called with mu held.
func (c *console) clearBar() {
	if c.outTTY && c.bar != "" && !c.asking {
		io.WriteString(c.out, "\r\x1b[K")
	}
}

func (c *console) drawBar() {
	if c.outTTY && c.bar != "" && !c.asking {
		io.WriteString(c.out, c.bar)
	}
}

// stdinLines reads answers from a terminal in cooked mode (echo and line
// editing by the terminal). A read that outlives its question (the server
// withdrew it) is kept, and its line answers the next question.
type stdinLines struct {
	out     io.Writer
	r       *bufio.Reader
	mu      sync.Mutex
	pending chan lineResult
}

type lineResult struct {
	line string
	err  error
}

func (s *stdinLines) readLine(ctx context.Context, prompt string) (string, error) {
	io.WriteString(s.out, prompt)
	s.mu.Lock()
	if s.pending == nil {
		ch := make(chan lineResult, 1)
		s.pending = ch
		go func() {
			line, err := s.r.ReadString('\n')
			ch <- lineResult{line, err}
		}()
	}
	ch := s.pending
	s.mu.Unlock()
	select {
	case r := <-ch:
		s.mu.Lock()
		s.pending = nil
		s.mu.Unlock()
		if r.err != nil && r.line == "" {
			io.WriteString(s.out, "\n")
			return "", io.EOF
		}
		return strings.TrimRight(r.line, "\r\n"), nil
	case <-ctx.Done():
		io.WriteString(s.out, "\n")
		return "", ctx.Err()
	}
}

// ---- progress ----

// progress follows one request's notifications/progress: on a terminal a
// bar with the server's message, redrawn in place; otherwise a plain line
// now and then. done removes the bar.
type progress struct {
	con   *console
	label string
	width int

	mu   sync.Mutex
	last time.Time
	text string // last plain line, to skip repeats
}

// minPlainInterval spaces the plain progress lines written when stderr is
// not a terminal; the last step is always written.
const (
	minPlainInterval = 250 * time.Millisecond
	minBarInterval   = 50 * time.Millisecond
)

func (c *console) progress(label string) *progress {
	w := 80
	if f, ok := c.out.(*os.File); ok && c.outTTY {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			w = cols
		}
	}
	return &progress{con: c, label: clean(label), width: w}
}

func (p *progress) update(n mcp.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	final := n.Total != nil && n.Progress >= *n.Total
	now := time.Now()
	if p.con.outTTY {
		if !final && now.Sub(p.last) < minBarInterval {
			return
		}
		p.last = now
		p.con.setBar(progressBar(p.label, n, p.width))
		return
	}
	line := progressText(p.label, n)
	if line == p.text || (!final && now.Sub(p.last) < minPlainInterval) {
		return
	}
	p.last, p.text = now, line
	p.con.printLine(line)
}

func (p *progress) done() {
	if p.con.outTTY {
		p.con.setBar("")
	}
}

// progressText is the plain form: "testserver.slow_operation: 3/10 step 3 of 10".
func progressText(label string, n mcp.Progress) string {
	s := label + ": " + amount(n)
	if n.Message != "" {
		s += " " + firstLine(sanitize.ForDisplay(n.Message))
	}
	return s
}

func amount(n mcp.Progress) string {
	num := func(f float64) string {
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			return fmt.Sprintf("%d", int64(f))
		}
		return fmt.Sprintf("%.1f", f)
	}
	if n.Total != nil && *n.Total > 0 {
		return num(n.Progress) + "/" + num(*n.Total)
	}
	return num(n.Progress)
}

// progressBar draws "label [=====>     ]  45% message" in width columns.
func progressBar(label string, n mcp.Progress, width int) string {
	msg := ""
	if n.Message != "" {
		msg = " " + firstLine(sanitize.ForDisplay(n.Message))
	}
	var mid string
	if n.Total != nil && *n.Total > 0 {
		frac := min(max(n.Progress / *n.Total, 0), 1)
		const barw = 24
		filled := int(frac * barw)
		bar := strings.Repeat("=", filled)
		if filled < barw {
			bar += ">" + strings.Repeat(" ", barw-filled-1)
		}
		mid = fmt.Sprintf(" [%s] %3d%%", bar, int(frac*100))
	} else {
		mid = " [" + amount(n) + "]"
	}
	s := label + mid + msg
	r := []rune(s)
	if len(r) > width-1 {
		r = append(r[:width-2], '…')
	}
	return string(r)
}

// ---- server log messages ----

// mcpToHclog maps MCP's syslog levels to the --log-level names.
func mcpToHclog(l mcp.LoggingLevel) hclog.Level {
	switch l {
	case "debug":
		return hclog.Debug
	case "info", "notice":
		return hclog.Info
	case "warning":
		return hclog.Warn
	case "":
		return hclog.Info
	}
	return hclog.Error // error, critical, alert, emergency, and anything unknown
}

// onLog shows a server's log message at or above --log-level, tagged with
// the server's name; the text is the server's, so it is sanitized.
func (a *app) onLog(server string, m mcp.LogMessage) {
	lvl := a.showLevel()
	if lvl == hclog.Off || mcpToHclog(m.Level) < lvl {
		return
	}
	a.console().printLine(formatLog(server, m))
}

func formatLog(server string, m mcp.LogMessage) string {
	level := string(m.Level)
	if level == "" {
		level = "info"
	}
	s := "[" + server + "] " + level
	if m.Logger != "" {
		s += " " + m.Logger
	}
	data := logData(m.Data)
	// One message, one line: a server must not fake further log lines.
	data = strings.ReplaceAll(strings.TrimSpace(data), "\n", " ⏎ ")
	const max = 2000
	if r := []rune(data); len(r) > max {
		data = string(r[:max]) + fmt.Sprintf("… (%d more characters)", len(r)-max)
	}
	return clean(s + ": " + data)
}

// logData is a log message's data: a string as it is, anything else as
// compact JSON.
func logData(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// callTool calls a tool with a progress token; what the server reports
// shows on stderr while the call runs.
func (a *app) callTool(ctx context.Context, h *host.Host, name string, args any) (*mcp.CallToolResult, error) {
	p := a.console().progress(name)
	defer p.done()
	return h.CallTool(ctx, a.agent, name, args, &host.CallOptions{OnProgress: p.update})
}

// showLevel is the level from which servers' log messages show: --log-level,
// or what the shell's /loglevel set since.
func (a *app) showLevel() hclog.Level {
	a.levelMu.Lock()
	defer a.levelMu.Unlock()
	if a.shown != hclog.NoLevel {
		return a.shown
	}
	return hclog.LevelFromString(a.logLevel)
}
