package diag

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/bounded"
)

// initializeRequest is what a person can paste into a stdio server to see
// whether it answers at all.
const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}`

// TryByHand is the fix that has a person send rawURL the initialize
// request with curl. It is the one place a report quotes a URL for a
// shell: a URL's & and ? mean something there, and a line a shell splits
// at & tests another URL than the one that failed.
func TryByHand(rawURL string) string {
	return "Test the endpoint by hand:\ncurl -i -X POST " + shQuote(rawURL) +
		" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d '" + initializeRequest + "'"
}

// HandshakeTimeout reports a server that did not finish the MCP initialize
// exchange in time. stderr is what the server wrote meanwhile (may be nil).
func HandshakeTimeout(c Context, timeout time.Duration, stderr []string, cause error) *Report {
	r := c.report("MCP Connection Failed")
	r.Problem = "Server did not complete MCP handshake within " + seconds(timeout)
	r.Cause = cause
	if s, ok := stderrSection(stderr); ok {
		r.Details = append(r.Details, s)
	}
	r.CausesHeading = "Possible causes"

	// A larger timeout in whole seconds; the config's "timeout" is in seconds.
	next := int(math.Ceil(2 * timeout.Seconds()))
	if next < 10 {
		next = 10
	}
	raise := "Increase \"timeout\" in this server's entry" + c.inFile() + " (seconds):\n\"timeout\": " + strconv.Itoa(next)
	if c.hcl() {
		raise = "Increase timeout in this server's block" + c.inFile() + ":\ntimeout = \"" + strconv.Itoa(next) + "s\""
	}

	if len(c.Command) == 0 && c.URL != "" {
		r.Causes = []string{
			"The server is slow to respond (starting up, or overloaded)",
			"The URL does not point to an MCP endpoint (check the path, often /mcp)",
			"A proxy or firewall holds the connection open without answering",
		}
		r.Fix = []string{TryByHand(c.URL), raise}
		return r
	}

	slow := "Server is slow to start (loading large models, connecting to databases)"
	if n := toolName(firstArg(c.Command)); n == "npx" || n == "uvx" || n == "bunx" || n == "pipx" {
		slow = "Server is slow to start (" + n + " downloads the package on first run; loading models, connecting to databases)"
	}
	r.Causes = []string{
		slow,
		"Server doesn't implement MCP over stdio correctly (for example, it logs to stdout)",
		"Server is waiting for input that will never come (a login or confirmation prompt)",
	}
	if len(c.Command) > 0 {
		r.Fix = append(r.Fix, "Test server manually: "+c.commandLine()+"\nThen type: "+initializeRequest)
	}
	r.Fix = append(r.Fix, "Check the server's stderr and logs for startup errors", raise)
	return r
}

func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// excerptWidth is how many columns of a bad message are shown: enough
// context to recognize it, short enough to fit a terminal line.
const excerptWidth = 120

// InvalidJSONFromServer reports a message from the server that is not
// valid JSON. offset is the index in frame of the offending byte; a
// negative offset takes it from a *json.SyntaxError in cause (whose Offset
// counts the bytes read, one past the offending byte). The report shows the
// bytes around it with a caret underneath, because "invalid character" alone
// rarely says which part of the server's output was wrong.
func InvalidJSONFromServer(c Context, frame []byte, offset int64, cause error) *Report {
	var syn *json.SyntaxError
	if offset < 0 && errors.As(cause, &syn) {
		offset = syn.Offset - 1
	}
	offset = max(0, min(offset, int64(len(frame))))

	r := c.report("MCP Protocol Error")
	r.Cause = cause
	r.Problem = "Server sent a message that is not valid JSON (at byte " + strconv.FormatInt(offset, 10) +
		" of " + strconv.Itoa(len(frame)) + ")"

	text, caret, cut := excerpt(frame, int(offset))
	mark := strings.Repeat(" ", caret) + "^"
	if cause != nil {
		mark += " " + firstLine(cause.Error())
	}
	heading := "Message"
	if cut {
		heading = "Message (excerpt)"
	}
	r.Details = []Section{{Heading: heading, Lines: []string{text, mark}}}

	trimmed := strings.TrimLeft(string(frame), " \t\r\n")
	looksLikeText := trimmed != "" && trimmed[0] != '{' && trimmed[0] != '['
	switch {
	case len(c.Command) == 0 && c.URL != "":
		r.Causes = []string{
			"The URL does not point to an MCP endpoint (the reply may be a web page or a proxy's error page)",
			"A bug in the server's JSON output",
		}
		r.Fix = []string{"Check the URL, and open it in a browser to see what answers there"}
	case looksLikeText:
		r.Causes = []string{
			"The server printed log or other text to stdout, which carries only MCP messages (logs belong on stderr)",
		}
		r.Fix = []string{
			"Make the server log to stderr (console.error in Node.js, print(..., file=sys.stderr) in Python)",
			"Check for a flag or setting that turns off the server's banner or output",
		}
	default:
		r.Causes = []string{
			"A bug in the server's JSON output",
			"The server printed other text to stdout in the middle of a message",
		}
		r.Fix = []string{"Report the bug to the server's authors with the message above"}
	}
	if len(c.Command) > 0 {
		r.Fix = append(r.Fix, "Run the server by hand to see what it prints: "+c.commandLine())
	}
	return r
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// excerpt renders up to excerptWidth columns of frame around offset on one
// line, and returns the column of offset in it and whether anything was
// left out. Every rune is drawn in one
// column (or two, for wide characters) so the caret lines up: controls
// become their Unicode control pictures (a newline shows as ␊) and bytes a
// terminal should not get become U+FFFD.
func excerpt(frame []byte, offset int) (text string, caret int, cut bool) {
	start := max(0, offset-excerptWidth/2)
	for start > 0 && !utf8.RuneStart(frame[start]) {
		start--
	}
	var b strings.Builder
	col := 0
	caret = -1
	if start > 0 {
		b.WriteString("…")
		col++
	}
	i := start
	for i < len(frame) && col < excerptWidth {
		if i >= offset && caret < 0 {
			caret = col
		}
		r, n := utf8.DecodeRune(frame[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1, r >= 0x80 && r <= 0x9f, isBidi(r):
			r = utf8.RuneError
		case r < 0x20:
			r = 0x2400 + r
		case r == 0x7f:
			r = 0x2421
		}
		b.WriteRune(r)
		col += runeWidth(r)
	}
	if i < len(frame) {
		b.WriteString("…")
	}
	if caret < 0 {
		caret = col // the error is at the end of the message
	}
	return b.String(), caret, start > 0 || i < len(frame)
}

// runeWidth is the number of terminal columns r takes: 0 for combining
// marks, 2 for East Asian wide characters and most emoji, else 1. Rough, but
// it keeps the caret under the right character in the common cases.
func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200b || r == 0x200d:
		return 0
	case r >= 0x1100 && r <= 0x115f, r >= 0x2e80 && r <= 0xa4cf && r != 0x303f,
		r >= 0xac00 && r <= 0xd7a3, r >= 0xf900 && r <= 0xfaff, r >= 0xfe30 && r <= 0xfe4f,
		r >= 0xff00 && r <= 0xff60, r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x3fffd:
		return 2
	}
	return 1
}

// FrameTooLarge reports a message over the transport's size limit; the
// session was closed to protect the host.
func FrameTooLarge(c Context, limit int, cause error) *Report {
	r := c.report("MCP Protocol Error")
	r.Cause = cause
	r.Problem = "Server sent a message larger than the " + bounded.Size(int64(limit)) + " limit, so the session was closed"
	r.Causes = []string{
		"A tool returned a very large result (a whole file, a large query result, a base64-encoded image)",
		"The server wrote a lot of non-MCP output to stdout without a line break",
	}
	r.Fix = []string{
		"Ask for less: narrow the query, paginate, or read large files in parts",
		"If the server has a setting for result size, lower it",
	}
	if len(c.Command) > 0 {
		r.Fix = append(r.Fix, "Run the server by hand to see what it prints: "+c.commandLine())
	}
	return r
}
