package wasm

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// appendEvent writes e as the event JSON of the ABI, as encoding/json
// would write it (field order, omitted empty fields), without reflection
// or allocation: every call of every filter pays for it. The raw params
// and result are checked, not re-encoded. TestEncodeEvent holds it to
// encoding/json's output, and to every field of the schema.
func appendEvent(b []byte, e *event.Event) ([]byte, error) {
	b = append(b, `{"abi":`...)
	b = strconv.AppendInt(b, int64(event.ABI), 10)
	b = append(b, `,"phase":`...)
	b = wire.AppendString(b, e.Phase)
	b = append(b, `,"method":`...)
	b = wire.AppendString(b, e.Method)
	b = append(b, `,"agent":{"id":`...)
	b = wire.AppendString(b, e.Agent.ID)
	b = append(b, `,"permission":`...)
	b = wire.AppendString(b, e.Agent.Permission)
	b = append(b, `},"server":{"name":`...)
	b = wire.AppendString(b, e.Server.Name)
	if i := e.Server.Info; i != nil {
		b = append(b, `,"info":{"name":`...)
		b = wire.AppendString(b, i.Name)
		b = append(b, `,"version":`...)
		b = wire.AppendString(b, i.Version)
		b = append(b, '}')
	}
	b = append(b, '}')
	if t := e.Tool; t != nil {
		b = append(b, `,"tool":{"name":`...)
		b = wire.AppendString(b, t.Name)
		if a := t.Annotations; a != nil {
			b = append(b, `,"annotations":{`...)
			first := true
			sep := func() {
				if !first {
					b = append(b, ',')
				}
				first = false
			}
			if a.Title != "" {
				sep()
				b = append(b, `"title":`...)
				b = wire.AppendString(b, a.Title)
			}
			for _, h := range []struct {
				name string
				v    *bool
			}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
				if h.v != nil {
					sep()
					b = append(b, '"')
					b = append(b, h.name...)
					b = append(b, `":`...)
					b = strconv.AppendBool(b, *h.v)
				}
			}
			b = append(b, '}')
		}
		if len(t.Definition) > 0 {
			if !wire.ValidJSON(t.Definition) {
				return b, errors.New("tool.definition is not valid JSON")
			}
			b = append(b, `,"definition":`...)
			b = append(b, t.Definition...)
		}
		b = append(b, '}')
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"params", e.Params}, {"result", e.Result}} {
		if len(f.raw) == 0 {
			continue
		}
		if !wire.ValidJSON(f.raw) {
			return b, errors.New(f.name + " is not valid JSON")
		}
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":`...)
		b = append(b, f.raw...)
	}
	return append(b, '}'), nil
}
