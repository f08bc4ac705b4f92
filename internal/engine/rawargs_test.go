package engine

import (
	"bytes"
	"testing"
)

// TestRawArgsOneHTMLRule: arguments given to the host reach a server as
// the bytes the protocol's client writes for the same value (<, > and &
// as they are), whatever their Go type. rawArgs once used json.Marshal,
// so a tool called through the host got "\u003c" where the same call
// through mcp.Client sent "<".
func TestRawArgsOneHTMLRule(t *testing.T) {
	type arg struct {
		Q string `json:"q"`
	}
	for _, v := range []any{
		map[string]any{"q": "<a&b>"},
		map[string]string{"q": "<a&b>"},
		arg{Q: "<a&b>"},
	} {
		raw, err := rawArgs(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(raw) != `{"q":"<a&b>"}` {
			t.Errorf("%#v encoded as %s, want {\"q\":\"<a&b>\"}", v, raw)
		}
		if bytes.Contains(raw, []byte(`\u00`)) {
			t.Errorf("%#v: HTML escaped: %s", v, raw)
		}
	}
}
