package audit

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRecord writes r as one JSON object, the fields in Record's order
// with its omitempty rules, into b: what json.Marshal writes, without its
// reflection and allocations (the writer's goroutine makes one record a
// call). TestAppendRecord holds it to encoding/json.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","agent":`...)
	b = appendString(b, r.Agent)
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = appendString(b, v)
		}
	}
	str("session", r.Session)
	str("server", r.Server)
	b = append(b, `,"method":`...)
	b = appendString(b, r.Method)
	str("tool", r.Tool)
	str("uri", r.URI)
	str("prompt", r.Prompt)
	b = append(b, `,"decision":`...)
	b = appendString(b, r.Decision)
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
			b = appendString(b, s.Link)
			if s.Source != "" {
				b = append(b, `,"source":`...)
				b = appendString(b, s.Source)
			}
			b = append(b, `,"action":`...)
			b = appendString(b, s.Action)
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
			b = appendString(b, f)
		}
		b = append(b, ']')
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	str("genesis", r.Genesis)
	b = append(b, `,"prev":`...)
	b = appendString(b, r.Prev)
	return append(b, '}'), nil
}

// appendString writes s as a JSON string, as encoding/json does (invalid
// UTF-8 as U+FFFD; <, >, & and U+2028/9 escaped).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += n
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += n
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
