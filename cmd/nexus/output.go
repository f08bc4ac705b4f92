package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/nexus-mcp/nexus/host"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// Everything printed from a server passes through sanitize.ForDisplay: a
// server must not be able to drive the terminal.

func (a *app) printText(s string) {
	s = sanitize.ForDisplay(s)
	if s == "" {
		return
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(a.stdout, s)
}

// printJSON writes v as indented JSON. JSON escapes control characters, so
// it is safe on a terminal as it is; the size cap still applies.
// What a terminal shows of one result before the rest is summarised: a
// 10 MiB log in a terminal's scrollback helps nobody, and piping or
// redirecting stdout gets all of it.
const (
	termMaxLines = 200
	termMaxBytes = 64 << 10
)

// printResult prints a result's text: all of it to a pipe or file; on a
// terminal, text that looks binary is summarised and long text cut, saying
// how to get the rest.
func (a *app) printResult(s string) {
	if !isTerminal(a.stdout) {
		a.printText(s)
		return
	}
	a.printText(forTerminal(s))
}

// printToolError shows a result the tool marked isError on stderr, under a
// line that says so (red on a terminal, unless NO_COLOR is set): on stdout
// it would read as a success.
func (a *app) printToolError(s string) {
	s = sanitize.ForDisplay(s)
	head := "Tool returned an error:"
	if isTerminal(a.stderr) {
		s = forTerminal(s)
		if os.Getenv("NO_COLOR") == "" {
			head = "\x1b[31m✗ " + head + "\x1b[0m"
		}
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	io.WriteString(a.stderr, head+"\n"+s)
}

// forTerminal summarises binary-looking text and cuts long text.
func forTerminal(s string) string {
	if looksBinary(s) {
		return fmt.Sprintf("[%d bytes of what looks like binary data, not shown on the terminal; redirect stdout to a file, or use --output json]", len(s))
	}
	if len(s) <= termMaxBytes && strings.Count(s, "\n") < termMaxLines {
		return s
	}
	head := s
	if i := nthIndex(head, '\n', termMaxLines); i >= 0 {
		head = head[:i]
	}
	if len(head) > termMaxBytes {
		cut := termMaxBytes
		for cut > 0 && !utf8.RuneStart(head[cut]) { // do not split a character
			cut--
		}
		head = head[:cut]
	}
	rest := s[len(head):]
	return fmt.Sprintf("%s\n[... %s more (%s) not shown on the terminal; redirect stdout to a file to get all %s]",
		strings.TrimRight(head, "\n"), byteSize(len(rest)), lineCount(strings.TrimPrefix(rest, "\n")), byteSize(len(s)))
}

// lineCount says how many lines s has: "3 lines", "part of a line".
func lineCount(s string) string {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	switch n {
	case 0:
		return "part of a line"
	case 1:
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

func nthIndex(s string, c byte, n int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n--
			if n == 0 {
				return i
			}
		}
	}
	return -1
}

// looksBinary: NUL bytes, or many replacement characters (bytes that were
// not UTF-8) or control pictures, in the first 8 KiB.
func looksBinary(s string) bool {
	if len(s) > 8192 {
		s = s[:8192]
	}
	if strings.IndexByte(s, 0) >= 0 {
		return true
	}
	bad, n := 0, 0
	for _, r := range s {
		n++
		if r == utf8.RuneError {
			bad++
		}
	}
	return n >= 32 && bad*10 > n
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func (a *app) printJSON(v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		fmt.Fprintf(a.stderr, "encoding output: %v\n", err)
		return
	}
	if len(b) > sanitize.MaxOutput {
		fmt.Fprintf(a.stderr, "output is %d bytes, over the %d byte cap; not printed\n", len(b), sanitize.MaxOutput)
		return
	}
	a.stdout.Write(append(b, '\n'))
}

func (a *app) printTable(rows [][2]string) {
	w := 0
	for _, r := range rows {
		w = max(w, utf8.RuneCountInString(sanitize.ForDisplay(r[0])))
	}
	// On a terminal the second column wraps at word boundaries, its
	// continuation lines under its start.
	avail := 0
	if f, ok := a.stdout.(*os.File); ok && isTerminal(f) {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols-w-2 >= 20 {
			avail = cols - w - 2
		}
	}
	var b strings.Builder
	for _, r := range rows {
		left := sanitize.ForDisplay(r[0])
		b.WriteString(left)
		if r[1] != "" {
			b.WriteString(strings.Repeat(" ", w-utf8.RuneCountInString(left)+2))
			lines := []string{sanitize.ForDisplay(r[1])}
			if avail > 0 && utf8.RuneCountInString(lines[0]) > avail {
				lines = wrapWords(lines[0], avail)
			}
			b.WriteString(strings.Join(lines, "\n"+strings.Repeat(" ", w+2)))
		}
		b.WriteByte('\n')
	}
	io.WriteString(a.stdout, b.String())
}

// wrapWords breaks s into lines of at most width runes at spaces; a word
// longer than width gets a line of its own.
func wrapWords(s string, width int) []string {
	var lines []string
	var line []string
	n := 0
	for _, word := range strings.Fields(s) {
		wl := utf8.RuneCountInString(word)
		if n > 0 && n+1+wl > width {
			lines = append(lines, strings.Join(line, " "))
			line, n = nil, 0
		}
		if n > 0 {
			n++
		}
		line = append(line, word)
		n += wl
	}
	if len(line) > 0 || len(lines) == 0 {
		lines = append(lines, strings.Join(line, " "))
	}
	return lines
}

func renderErr(w io.Writer, err error) { host.Render(w, err) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// renderContent turns content blocks into text for a terminal: text as it
// is, binary as a one-line summary, never raw bytes.
func renderContent(content []mcp.Content, structured json.RawMessage) string {
	var parts []string
	hasText := false
	for _, c := range content {
		switch c.Type {
		case mcp.ContentText:
			parts = append(parts, c.Text)
			hasText = true
		case mcp.ContentImage, mcp.ContentAudio:
			parts = append(parts, fmt.Sprintf("[%s: %s, %s; --out FILE writes it]", c.Type, c.MimeType, sizeOf(c.Data)))
		case mcp.ContentResourceLink:
			s := "[resource link: " + c.URI
			if c.Name != "" {
				s += " (" + c.Name + ")"
			}
			parts = append(parts, s+"]")
		case mcp.ContentResource:
			if c.Resource != nil {
				parts = append(parts, renderResource(*c.Resource))
			}
		default:
			parts = append(parts, fmt.Sprintf("[content of unknown type %q, %d bytes; use --output json to see it]", c.Type, len(c.Raw)))
		}
	}
	if !hasText && len(structured) > 0 {
		var v any
		if json.Unmarshal(structured, &v) == nil {
			b, _ := json.MarshalIndent(v, "", "  ")
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}

func renderResource(rc mcp.ResourceContents) string {
	if rc.Blob != "" {
		return fmt.Sprintf("[blob %s: %s, %s; --out FILE writes it]", rc.URI, rc.MimeType, sizeOf(rc.Blob))
	}
	return rc.Text
}

// sizeOf reports the decoded size of base64 data.
func sizeOf(b64 string) string {
	n := base64.StdEncoding.DecodedLen(len(b64))
	if d, err := base64.StdEncoding.DecodeString(b64); err == nil {
		n = len(d)
	}
	return fmt.Sprintf("%d bytes", n)
}
