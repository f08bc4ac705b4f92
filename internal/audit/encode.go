package audit

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// appendRecord writes r as one JSON object, the fields in Record's order
// with its omitempty rules, into b: what json.Marshal writes, without its
// reflection and allocations (the writer's goroutine makes one record a
// call). TestAppendRecord holds it to encoding/json.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","agent":`...)
	b = wire.AppendStringHTML(b, r.Agent)
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = wire.AppendStringHTML(b, v)
		}
	}
	str("session", r.Session)
	str("server", r.Server)
	b = append(b, `,"method":`...)
	b = wire.AppendStringHTML(b, r.Method)
	str("tool", r.Tool)
	str("uri", r.URI)
	str("prompt", r.Prompt)
	b = append(b, `,"decision":`...)
	b = wire.AppendStringHTML(b, r.Decision)
	str("link", r.Link)
	str("source", r.Source)
	str("reason", r.Reason)
	if len(r.Steps) > 0 {
		b = append(b, `,"steps":[`...)
		for i, s := range r.Steps {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"link":`...)
			b = wire.AppendStringHTML(b, s.Link)
			if s.Source != "" {
				b = append(b, `,"source":`...)
				b = wire.AppendStringHTML(b, s.Source)
			}
			b = append(b, `,"action":`...)
			b = wire.AppendStringHTML(b, s.Action)
			b = append(b, `,"us":`...)
			b = strconv.AppendFloat(b, s.Micros, 'f', -1, 64)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	str("args_sha256", r.ArgsSHA256)
	if len(r.Args) > 0 {
		if !json.Valid(r.Args) {
			return nil, errors.New("the record's args are not JSON")
		}
		b = append(b, `,"args":`...)
		b = append(b, r.Args...)
	}
	if r.IsError != nil {
		b = append(b, `,"is_error":`...)
		b = strconv.AppendBool(b, *r.IsError)
	}
	if r.Bytes != 0 {
		b = append(b, `,"bytes":`...)
		b = strconv.AppendInt(b, int64(r.Bytes), 10)
	}
	if len(r.Flags) > 0 {
		b = append(b, `,"flags":[`...)
		for i, f := range r.Flags {
			if i > 0 {
				b = append(b, ',')
			}
			b = wire.AppendStringHTML(b, f)
		}
		b = append(b, ']')
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	str("genesis", r.Genesis)
	b = append(b, `,"prev":`...)
	b = wire.AppendStringHTML(b, r.Prev)
	return append(b, '}'), nil
}
