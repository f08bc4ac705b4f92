package wasm

import (
	"errors"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// A guest's decision is outside input: whatever it is, decoding gives a
// valid decision or an error, never a panic.
func FuzzDecodeDecision(f *testing.F) {
	for _, s := range []string{`{"action":"allow"}`, `{"action":"deny","reason":"no"}`, `{"action":"modify","params":{"a":1}}`,
		`{"action":"modify","result":[]}`, `{"error":"x"}`, `{"action":"maybe"}`, `hello`, `{"action":"modify"}`, `null`, `[]`, `{"action":"allow","flags":["a","b"]}`, `{"action":"deny","flags":[1]}`} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, out []byte, response bool) {
		phase := event.PhaseRequest
		if response {
			phase = event.PhaseResponse
		}
		d, err := decodeDecision(out, phase)
		if err != nil {
			if !errors.Is(err, ErrBadDecision) && !errors.Is(err, ErrFailed) {
				t.Fatalf("%q: unexpected error kind %v", out, err)
			}
			return
		}
		if !d.Valid(phase) {
			t.Fatalf("%q: invalid decision %+v accepted", out, d)
		}
		if len(d.Flags) > maxFlags+1 {
			t.Fatalf("%q: %d flags kept", out, len(d.Flags))
		}
	})
}

// A guest that flags without end has its flags cut, saying how many.
func TestDecisionFlagsBounded(t *testing.T) {
	out := []byte(`{"action":"allow","flags":[`)
	for i := range 40 {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `"f"`...)
	}
	out = append(out, `]}`...)
	d, err := decodeDecision(out, event.PhaseRequest)
	if err != nil || len(d.Flags) != maxFlags+1 || d.Flags[maxFlags] != "(and 24 more)" {
		t.Fatalf("%+v %v", d.Flags, err)
	}
}
