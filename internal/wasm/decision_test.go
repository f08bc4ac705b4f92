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
	})
}
