package wasm

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Every call checks the event's params and result before a guest sees them
// and the decision a guest writes back; with encoding/json that was most of
// the host's share of a call on a 2 KB result (its scanner takes a function
// call per byte). Validation is internal/wire's scanner; fastDecision
// below accepts only what encoding/json accepts, and gives up (ok=false)
// on anything it is not sure of, so the caller can ask encoding/json: it
// is never wrong, only sometimes not taken. FuzzFastJSON holds it to
// encoding/json.

// fastDecision decodes a decision written the way the Go SDK writes it:
// {"action":...,"reason":...,"params":...,"result":...} with the optional
// members in that order, or {"error":...}, with no white space between
// members and strings without escapes. ok=false means "decode it with
// encoding/json" (another order or spelling, escapes, anything odd), which
// any guest may write and which is just as valid.
func fastDecision(out []byte) (d event.Decision, failure *string, ok bool) {
	const (
		action = `{"action":`
		errKey = `{"error":`
	)
	str := func(i int) (string, int, bool) {
		if i >= len(out) || out[i] != '"' {
			return "", i, false
		}
		// Plain strings only: no escapes and valid UTF-8, so the bytes
		// are the value.
		end, escaped, err := wire.SkipString(out, i)
		if err != nil || escaped || !utf8.Valid(out[i+1:end-1]) {
			return "", i, false
		}
		return string(out[i+1 : end-1]), end, true
	}
	raw := func(i int) (json.RawMessage, int, bool) {
		end, err := wire.SkipValue(out, i, 0)
		if err != nil {
			return nil, i, false
		}
		if string(out[i:end]) == "null" {
			return nil, end, true
		}
		return append(json.RawMessage(nil), out[i:end]...), end, true
	}
	has := func(i int, key string) bool { return len(out)-i >= len(key) && string(out[i:i+len(key)]) == key }
	if has(0, errKey) {
		msg, i, ok := str(len(errKey))
		if !ok || i != len(out)-1 || out[i] != '}' {
			return d, nil, false
		}
		return d, &msg, true
	}
	if !has(0, action) {
		return d, nil, false
	}
	i := len(action)
	if d.Action, i, ok = str(i); !ok {
		return d, nil, false
	}
	if has(i, `,"reason":`) {
		if d.Reason, i, ok = str(i + len(`,"reason":`)); !ok {
			return d, nil, false
		}
	}
	if has(i, `,"params":`) {
		if d.Params, i, ok = raw(i + len(`,"params":`)); !ok {
			return d, nil, false
		}
	}
	if has(i, `,"result":`) {
		if d.Result, i, ok = raw(i + len(`,"result":`)); !ok {
			return d, nil, false
		}
	}
	if i != len(out)-1 || out[i] != '}' {
		return event.Decision{}, nil, false
	}
	return d, nil, true
}
