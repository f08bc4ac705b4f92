package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/suggest"
)

// Error is a config problem a person can act on; it renders as a diag.Report.
type Error = diag.Report

const (
	errTitle  = "MCP Configuration Error"
	warnTitle = "MCP Configuration Warning"
)

// Errors is every problem found while loading, in file order: a person
// fixing a config wants all of them at once, not one per run.
type Errors []*diag.Report

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, r := range e {
		parts[i] = r.Error()
	}
	return strings.Join(parts, "\n\n")
}

// Unwrap lets errors.As find the reports.
func (e Errors) Unwrap() []error {
	out := make([]error, len(e))
	for i, r := range e {
		out[i] = r
	}
	return out
}

// Reports lists the reports in err: every one of an Errors, or the one
// Report in its chain.
func Reports(err error) []*diag.Report {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var r *diag.Report
	if errors.As(err, &r) {
		return []*diag.Report{r}
	}
	return nil
}

// Warning is a problem that does not stop loading, such as an unknown field
// (which other clients may use) or a setting a compile target cannot express.
type Warning struct {
	Source  diag.Source
	Subject string // what it is about: `server "github"`, `filter "pii"`, or ""
	Message string
}

func (w Warning) String() string {
	var b strings.Builder
	b.WriteString("Warning: ")
	if w.Subject != "" {
		b.WriteString(w.Subject + ": ")
	}
	b.WriteString(w.Message)
	if s := w.Source.String(); s != "" {
		b.WriteString(" (" + s + ")")
	}
	return b.String()
}

// file is one config file being read: its bytes for snippets, where it came
// from, and what was found wrong with it so far.
type file struct {
	src   diag.Source
	data  []byte
	errs  Errors
	warns []Warning
	lines []int // offsets where lines start, built on first use
}

// at is the source position of byte offset off.
func (f *file) at(off int) diag.Source {
	if f.lines == nil {
		f.lines = []int{0}
		for i, c := range f.data {
			if c == '\n' {
				f.lines = append(f.lines, i+1)
			}
		}
	}
	off = max(0, min(off, len(f.data)))
	n := sort.Search(len(f.lines), func(i int) bool { return f.lines[i] > off }) // lines[n-1] <= off
	s := f.src
	s.Line, s.Column = n, utf8.RuneCount(f.data[f.lines[n-1]:off])+1
	return s
}

// errAt records an error about the bytes at off (underlined for width
// columns), with a snippet of the lines around it.
func (f *file) errAt(off, width int, server, problem string, fix ...string) *diag.Report {
	src := f.at(off)
	r := &diag.Report{Title: errTitle, Server: server, Source: src, Problem: problem, Fix: fix}
	r.Details = []diag.Section{{Lines: snippet(f.data, src.Line, src.Column, width, "")}}
	f.errs = append(f.errs, r)
	return r
}

// failAt records an error at src, a place in the file found by a
// component's own reading of a value (an expression's column).
func (f *file) failAt(src diag.Source, server, problem string, fix ...string) *diag.Report {
	r := &diag.Report{Title: errTitle, Server: server, Source: src, Problem: problem, Fix: fix}
	r.Details = []diag.Section{{Lines: snippet(f.data, src.Line, src.Column, 1, "")}}
	f.errs = append(f.errs, r)
	return r
}

// site is where the bytes at off are, with their snippet.
func (f *file) site(off, width int) *site {
	src := f.at(off)
	return &site{src, snippet(f.data, src.Line, src.Column, width, "")}
}

// err records an error about the whole file.
func (f *file) err(problem string, fix ...string) *diag.Report {
	r := &diag.Report{Title: errTitle, Source: f.src, Problem: problem, Fix: fix}
	f.errs = append(f.errs, r)
	return r
}

func (f *file) warnAt(off int, subject, format string, args ...any) {
	f.warns = append(f.warns, Warning{Source: f.at(off), Subject: subject, Message: fmt.Sprintf(format, args...)})
}

// subject names an entity for warnings: server "github".
func subject(what, name string) string {
	if name == "" {
		return what
	}
	return what + " " + strconv.Quote(name)
}

// snippet shows the line before, the line, and the line after line, with
// a caret (or ^^^ for width > 1) under column col and an optional note
// after it: the seed's picture of a JSON mistake (1.9.6).
func snippet(data []byte, line, col, width int, note string) []string {
	lines := strings.Split(string(data), "\n")
	var out []string
	for n := max(1, line-1); n <= min(len(lines), line+1); n++ {
		text := strings.ReplaceAll(strings.TrimRight(lines[n-1], "\r"), "\t", " ")
		if utf8.RuneCountInString(text) > 160 {
			text = string([]rune(text)[:160]) + "…"
		}
		out = append(out, fmt.Sprintf("%4d │ %s", n, text))
		if n == line {
			w := max(1, min(width, utf8.RuneCountInString(text)-col+1))
			mark := strings.Repeat(" ", max(0, col-1)) + strings.Repeat("^", w)
			if note != "" {
				mark += " " + note
			}
			out = append(out, "     │ "+mark)
		}
	}
	return out
}

// suggestKey returns the known word nearest to s, if it is near enough to be
// a typo: "comand" → "command", "mcpServer" → "mcpServers".
func suggestKey(s string, known []string) string {
	if alt, ok := synonyms[strings.ToLower(s)]; ok && slices.Contains(known, alt) {
		return alt
	}
	best, bestD := "", 1<<30
	for _, k := range known {
		if d := suggest.Distance(strings.ToLower(s), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if bestD <= max(1, min(3, len(s)/3)) {
		return best
	}
	return ""
}

// sortErrs puts a file's reports in the order of the text they are about.
func (f *file) sortErrs() {
	sort.SliceStable(f.errs, func(i, j int) bool {
		a, b := f.errs[i].Source, f.errs[j].Source
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// didYouMean is " Did you mean "x"?" when s looks like a typo of a known word.
func didYouMean(s string, known []string) string {
	if k := suggestKey(s, known); k != "" {
		return fmt.Sprintf(" Did you mean %q?", k)
	}
	return ""
}

// synonyms are names other tools and habits use for settings Nexus spells
// otherwise, too far apart for the edit distance to find.
var synonyms = map[string]string{
	"arguments": "args", "argv": "args",
	"environment": "env", "envs": "env", "environment_variables": "env",
	"cmd": "command", "exec": "command", "executable": "command",
	"workdir": "cwd", "working_dir": "cwd", "working_directory": "cwd", "dir": "cwd",
	"endpoint": "url", "uri": "url", "address": "url",
	"header":   "headers",
	"disabled": "enabled",
}
