package plugin

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
)

// Limits of what the host keeps of a plugin's stderr.
const (
	keptLines    = 50
	maxKeptLine  = 2048
	maxLineBytes = 64 << 10 // a line longer than this is cut
)

// lineRing keeps the last lines a plugin wrote, for error messages. It is
// an io.Writer that splits on newlines; hclog's JSON lines are rendered as
// "[LEVEL] message key=value" so that they read well in a report.
type lineRing struct {
	mu      sync.Mutex
	partial []byte
	lines   []string
	log     func(string) // optional: each complete line, as kept
}

func (r *lineRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(r.partial) < maxLineBytes {
				r.partial = append(r.partial, p[:min(len(p), maxLineBytes-len(r.partial))]...)
			}
			break
		}
		if len(r.partial) < maxLineBytes {
			r.partial = append(r.partial, p[:min(i, maxLineBytes-len(r.partial))]...)
		}
		r.add(r.partial)
		r.partial = r.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (r *lineRing) add(b []byte) {
	s := renderLogLine(bytes.TrimRight(b, "\r"))
	// Debug and trace lines (go-plugin's own chatter among them) are logged
	// but not kept: the tail in an error should show what went wrong.
	if strings.TrimSpace(s) == "" || strings.HasPrefix(s, "[DEBUG] ") || strings.HasPrefix(s, "[TRACE] ") {
		return
	}
	if len(r.lines) == keptLines {
		copy(r.lines, r.lines[1:])
		r.lines = r.lines[:keptLines-1]
	}
	r.lines = append(r.lines, s)
	if r.log != nil {
		r.log(s)
	}
}

// snapshot returns the kept lines and any unterminated last line.
func (r *lineRing) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.lines...)
	if len(r.partial) > 0 {
		out = append(out, renderLogLine(r.partial))
	}
	return out
}

// renderLogLine turns an hclog JSON line into text; anything else is kept
// as it is, cut to maxKeptLine bytes on a rune boundary, as valid UTF-8.
func renderLogLine(b []byte) string {
	if len(b) > 0 && b[0] == '{' {
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			if msg, ok := m["@message"].(string); ok {
				var sb strings.Builder
				if lvl, ok := m["@level"].(string); ok && lvl != "" {
					sb.WriteString("[" + strings.ToUpper(lvl) + "] ")
				}
				sb.WriteString(msg)
				keys := make([]string, 0, len(m))
				for k := range m {
					if !strings.HasPrefix(k, "@") {
						keys = append(keys, k)
					}
				}
				slices.Sort(keys)
				for _, k := range keys {
					v, _ := json.Marshal(m[k])
					sb.WriteString(" " + k + "=" + string(v))
				}
				b = []byte(sb.String())
			}
		}
	}
	if len(b) > maxKeptLine {
		n := maxKeptLine
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		b = b[:n]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// logWriter re-emits what a plugin writes to its os.Stdout or os.Stderr
// (after the handshake, go-plugin carries them over gRPC) as log lines.
type logWriter struct {
	ring  *lineRing // nil: do not keep
	log   hclog.Logger
	level hclog.Level
	lr    lineRing
	once  sync.Once
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		w.lr.log = func(s string) {
			w.log.Log(w.level, s)
			if w.ring != nil {
				w.ring.mu.Lock()
				if len(w.ring.lines) == keptLines {
					copy(w.ring.lines, w.ring.lines[1:])
					w.ring.lines = w.ring.lines[:keptLines-1]
				}
				w.ring.lines = append(w.ring.lines, s)
				w.ring.mu.Unlock()
			}
		}
	})
	return w.lr.Write(p)
}

// guardLogLines passes a plugin's stderr on to go-plugin with one change.
// go-plugin reads the "@message", "@level" and "@timestamp" of a JSON line
// as strings without checking (a type assertion, in its reader goroutine),
// so a single line such as {"@message": 1}, from any plugin and even
// before its handshake, would panic and take the whole host down. Such a
// value is passed on as the string of its JSON instead. Lines up to twice
// go-plugin's line buffer are checked, so every line it parses whole has
// been; longer ones pass through untouched (go-plugin reads them in pieces
// and parses none). The goroutine ends with the plugin's stderr.
func guardLogLines(r io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 2*maxLineBytes)
		piece := false // the next slice continues a line too long to check
		for {
			line, err := br.ReadSlice('\n')
			if len(line) > 0 {
				if !piece {
					line = fixLogLine(line)
				}
				if _, werr := pw.Write(line); werr != nil {
					// No one reads any more: drain, so that the plugin
					// never blocks on a full pipe.
					_, _ = io.Copy(io.Discard, r)
					return
				}
			}
			piece = errors.Is(err, bufio.ErrBufferFull)
			if err != nil && !piece {
				pw.Close()
				return
			}
		}
	}()
	return pr
}

// hclogStrings are the keys go-plugin takes for strings in a JSON log line.
var hclogStrings = []string{"@message", "@level", "@timestamp"}

// fixLogLine returns line, or, when it is a JSON object whose hclogStrings
// are not all strings, the object with each of those as the string of its
// JSON.
func fixLogLine(line []byte) []byte {
	body := bytes.TrimRight(line, "\r\n")
	if len(body) == 0 || body[0] != '{' || !bytes.Contains(body, []byte(`"@`)) {
		return line
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return line
	}
	fixed := false
	for _, k := range hclogStrings {
		if v, ok := m[k]; ok {
			if _, ok := v.(string); !ok {
				b, _ := json.Marshal(v)
				m[k] = string(b)
				fixed = true
			}
		}
	}
	if !fixed {
		return line
	}
	b, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return append(b, line[len(body):]...)
}
