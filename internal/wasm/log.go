package wasm

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"

	abi "github.com/nexus-mcp/nexus/internal/filterabi"
)

// logCapture collects what an instance logs during one call (or its
// start): log calls, stdout and stderr. It keeps at most limit bytes and
// counts the rest, so a guest that writes megabytes costs the host a
// counter, not its memory or its log.
type logCapture struct {
	limit        int
	used         int
	dropped      int // bytes
	droppedLines int // lines past maxLogLines, or with no bytes left to keep
	lines        []LogLine
	partial      [2][]byte // unfinished stdout and stderr lines
}

// maxLogLines bounds the lines one call keeps: a guest looping on empty
// log calls would otherwise cost a line each, whatever the byte cap.
const maxLogLines = 256

var streams = [2]string{"stdout", "stderr"}

// streamWriter is an instance's stdout (0) or stderr (1).
type streamWriter struct {
	c      *logCapture
	stream int
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.c.write(w.stream, p)
	return len(p), nil // never fail: a guest might retry forever
}

func (c *logCapture) room(n int) int {
	take := min(n, c.limit-c.used)
	if take < 0 {
		take = 0
	}
	c.used += take
	c.dropped += n - take
	return take
}

func (c *logCapture) write(stream int, p []byte) {
	p = p[:c.room(len(p))]
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.partial[stream] = append(c.partial[stream], p...)
			return
		}
		line := p[:i]
		if len(c.partial[stream]) > 0 {
			line = append(c.partial[stream], line...)
			c.partial[stream] = c.partial[stream][:0]
		}
		c.line(LogLine{Level: streamLevel(stream), Stream: streams[stream], Text: string(line)})
		p = p[i+1:]
	}
}

func streamLevel(stream int) abi.Level {
	if stream == 1 {
		return abi.LevelWarn
	}
	return abi.LevelInfo
}

func (c *logCapture) addBytes(level abi.Level, msg []byte) {
	if c.used >= c.limit {
		c.dropped += len(msg)
		c.droppedLines++
		return
	}
	c.line(LogLine{Level: level, Stream: "log", Text: string(msg[:c.room(len(msg))])})
}

func (c *logCapture) add(level abi.Level, stream, msg string) {
	c.line(LogLine{Level: level, Stream: stream, Text: msg})
}

// line keeps l, unless the call has used its lines: then it is counted.
func (c *logCapture) line(l LogLine) {
	if len(c.lines) >= maxLogLines {
		c.droppedLines++
		return
	}
	c.lines = append(c.lines, l)
}

// lastError is the last error logged: a filter's reason for refusing its
// config.
func (c *logCapture) lastError() string {
	for i := len(c.lines) - 1; i >= 0; i-- {
		if c.lines[i].Level >= abi.LevelError || c.lines[i].Stream == "stderr" {
			return c.lines[i].Text
		}
	}
	return ""
}

// stderrTail is the end of what the guest wrote to stderr, for error
// messages: a Go guest's panic or fatal error is there.
func (c *logCapture) stderrTail() string {
	var tail []string
	for _, l := range c.lines {
		if l.Stream == "stderr" && strings.TrimSpace(l.Text) != "" {
			tail = append(tail, l.Text)
		}
	}
	if p := strings.TrimSpace(string(c.partial[1])); p != "" {
		tail = append(tail, p)
	}
	if len(tail) == 0 {
		return ""
	}
	// A Go panic starts with the message; a stack follows it.
	for i, l := range tail {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") || strings.HasPrefix(l, "runtime: ") {
			return "; its stderr says: " + clip(strings.Join(tail[i:min(i+3, len(tail))], " | "), 400)
		}
	}
	return "; its stderr ends: " + clip(strings.Join(tail[max(0, len(tail)-3):], " | "), 400)
}

// flush finishes the call's log: it sends every line to logger and returns
// them, and resets the capture for the next call.
func (c *logCapture) flush(logger hclog.Logger) []LogLine {
	for s := range c.partial {
		if len(c.partial[s]) > 0 {
			c.lines = append(c.lines, LogLine{Level: streamLevel(s), Stream: streams[s], Text: string(c.partial[s])})
			c.partial[s] = c.partial[s][:0]
		}
	}
	switch {
	case c.droppedLines > 0:
		c.lines = append(c.lines, LogLine{Level: abi.LevelWarn, Stream: "log",
			Text: fmt.Sprintf("output capped at %s and %d lines per call: %s and %d lines more dropped", size(c.limit), maxLogLines, size(c.dropped), c.droppedLines)})
	case c.dropped > 0:
		c.lines = append(c.lines, LogLine{Level: abi.LevelWarn, Stream: "log",
			Text: fmt.Sprintf("output capped at %s per call: %s more dropped", size(c.limit), size(c.dropped))})
	}
	lines := c.lines
	for _, l := range lines {
		logger.Log(hclogLevel(l.Level), l.Text, "stream", l.Stream)
	}
	c.lines, c.used, c.dropped, c.droppedLines = nil, 0, 0, 0
	return lines
}

func hclogLevel(l abi.Level) hclog.Level {
	switch l {
	case abi.LevelTrace:
		return hclog.Trace
	case abi.LevelDebug:
		return hclog.Debug
	case abi.LevelWarn:
		return hclog.Warn
	case abi.LevelError:
		return hclog.Error
	}
	return hclog.Info
}

func size(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
