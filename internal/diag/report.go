package diag

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/sanitize"
)

// Report is an error with the context a person needs to fix it. Its Error
// method returns the full multi-line rendering, so a Report printed by any
// means reads the same; Render is the usual way to print one.
//
// Empty fields are left out of the rendering.
type Report struct {
	Title   string   // "MCP Server Launch Failed"
	Server  string   // the server's name in the config
	Source  Source   // where the server (or the failing setting) was defined
	Command []string // the stdio command, rendered as a JSON array
	URL     string   // the HTTP endpoint
	Problem string   // what went wrong, in one sentence
	Details []Section
	Causes  []string // numbered when more than one
	Fix     []string // bullets; lines after the first are indented under it

	// CausesHeading replaces "Likely cause(s)" (e.g. "Possible causes",
	// "Windows-specific causes"); FixHeading replaces "Troubleshooting".
	CausesHeading string
	FixHeading    string

	Cause error // the underlying error, for errors.Is and errors.As
}

// Section is a titled block of evidence, such as the tail of a server's
// stderr. Its lines are shown indented under the heading.
type Section struct {
	Heading string
	Lines   []string
}

// Unwrap returns the underlying error.
func (r *Report) Unwrap() error { return r.Cause }

// Error renders the report. Every piece is sanitized on its own, so that an
// unterminated escape sequence in one (say, a stderr line) cannot swallow
// the text of the next.
func (r *Report) Error() string {
	var b strings.Builder

	title := clean(r.Title)
	if title == "" {
		title = "Error"
	}
	b.WriteString(title)
	b.WriteByte('\n')
	b.WriteString(strings.Repeat("━", utf8.RuneCountInString(title)))
	b.WriteByte('\n')

	// Each block is preceded by a blank line, as in the seed's layout.
	block := func() { b.WriteByte('\n') }

	src := r.Source.String()
	if r.Server != "" || src != "" || len(r.Command) > 0 || r.URL != "" {
		block()
		if r.Server != "" {
			b.WriteString("Server: " + quote(r.Server) + "\n")
		}
		if src != "" {
			b.WriteString("Source: " + clean(src) + "\n")
		}
		if len(r.Command) > 0 {
			b.WriteString("Command: " + jsonArray(MaskCommand(r.Command)) + "\n")
		}
		if r.URL != "" {
			b.WriteString("URL: " + clean(r.URL) + "\n")
		}
	}

	if r.Problem != "" {
		block()
		writeItem(&b, "Problem: ", "  ", r.Problem)
	}

	for _, s := range r.Details {
		block()
		if s.Heading != "" {
			b.WriteString(clean(s.Heading) + ":\n")
		}
		for _, l := range s.Lines {
			writeItem(&b, "  ", "  ", l)
		}
	}

	if len(r.Causes) > 0 {
		block()
		heading := r.CausesHeading
		switch {
		case len(r.Causes) == 1:
			if heading == "" {
				heading = "Likely cause"
			}
			// One cause reads as a sentence; its later lines, as in the
			// seed, are not indented.
			writeItem(&b, clean(heading)+": ", "", r.Causes[0])
		default:
			if heading == "" {
				heading = "Likely causes"
			}
			b.WriteString(clean(heading) + ":\n")
			for i, c := range r.Causes {
				num := "  " + strconv.Itoa(i+1) + ". "
				writeItem(&b, num, strings.Repeat(" ", len(num)), c)
			}
		}
	}

	if len(r.Fix) > 0 {
		block()
		heading := r.FixHeading
		if heading == "" {
			heading = "Troubleshooting"
		}
		b.WriteString(clean(heading) + ":\n")
		for _, f := range r.Fix {
			writeItem(&b, "  • ", "    ", f)
		}
	}

	return strings.TrimSuffix(b.String(), "\n")
}

// writeItem writes text after first, and each further line of it after
// rest, so that multi-line items (a JSON snippet under a bullet) stay
// aligned.
func writeItem(b *strings.Builder, first, rest, text string) {
	for i, line := range strings.Split(clean(text), "\n") {
		if i == 0 {
			b.WriteString(first)
		} else if line != "" {
			b.WriteString(rest)
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

// clean is s as a report shows it: the credentials of URLs in it masked,
// and nothing a terminal would act on.
func clean(s string) string { return sanitize.ForDisplay(MaskURLs(s)) }

// Render prints err for a person: a *Report anywhere in err's chain in full,
// anything else as "Error: " and its message. All of it is sanitized, since
// error messages routinely quote what servers sent.
//
// A Report wrapped by fmt.Errorf("...: %w", r) is printed alone: its own
// text already says what failed and where, and the prefix would split the
// title from its underline.
func Render(w io.Writer, err error) {
	if err == nil {
		return
	}
	var r *Report
	if errors.As(err, &r) && r != nil {
		io.WriteString(w, r.Error()+"\n")
		return
	}
	io.WriteString(w, "Error: "+clean(err.Error())+"\n")
}

// quote renders s as a JSON string, with everything a terminal would act on
// escaped rather than removed: a config value with a stray control or bidi
// character should be visible as such, since that is often the bug.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\ufffd`)
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || isBidi(r):
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)) + h)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isBidi(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// jsonArray renders args the way people write a command in mcp.json:
// ["npx", "-y", "@modelcontextprotocol/server-filesystem"].
func jsonArray(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
