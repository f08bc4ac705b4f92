package wasm

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	abi "github.com/nexus-mcp/nexus/internal/filterabi"
)

// A guest that floods log calls, empty ones included, costs the host a
// bounded number of lines and one line saying what was dropped (issue 20,
// item 3).
func TestLogFlood(t *testing.T) {
	c := &logCapture{limit: 64 << 10}
	big := make([]byte, 1<<20)
	for i := range 1_000_000 {
		switch i % 3 {
		case 0:
			c.addBytes(abi.LevelInfo, nil)
		case 1:
			c.addBytes(abi.LevelInfo, big[:i%4096])
		default:
			c.add(abi.LevelError, "log", "(log called outside the filter's memory)")
		}
	}
	if len(c.lines) > maxLogLines {
		t.Fatalf("%d lines kept", len(c.lines))
	}
	lines := c.flush(hclog.NewNullLogger())
	last := lines[len(lines)-1].Text
	if len(lines) != maxLogLines+1 || !strings.Contains(last, "lines more dropped") {
		t.Errorf("%d lines, last %q", len(lines), last)
	}
	// The next call starts afresh.
	c.addBytes(abi.LevelInfo, []byte("hello"))
	if l := c.flush(hclog.NewNullLogger()); len(l) != 1 || l[0].Text != "hello" {
		t.Errorf("after a flood: %+v", l)
	}
}
