package mcp

import (
	"encoding/json"
	"testing"
)

// FuzzEnvelope: the envelope parser accepts nothing encoding/json calls
// invalid (the scanner under it is held to encoding/json by
// internal/wire's FuzzScanner).
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{`{}`, `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","method":"ping","id":"a"}`, `{"method":1}`, `{"a":1}}`, `[1]`, `{"id":1,"id":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e envelope
		if parseEnvelope(b, &e) == nil && !json.Valid(b) {
			t.Fatalf("envelope accepted invalid JSON %q", b)
		}
	})
}

func BenchmarkEnvelope(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	b.Run("scanner", func(b *testing.B) {
		b.ReportAllocs()
		var e envelope
		for b.Loop() {
			if err := parseEnvelope(frame, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
				Result  json.RawMessage `json:"result"`
				Error   *RPCError       `json:"error"`
			}
			if err := json.Unmarshal(frame, &w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
