package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// Hand-written codecs for the messages of every tool call: tools/call params
// and results and their content blocks. They produce and accept exactly what
// encoding/json does for these types (the tests compare both), without
// reflection and without the second validation pass encoding/json makes.

// appender is implemented by types that encode themselves straight into a
// frame buffer.
type appender interface {
	appendJSON(b []byte) ([]byte, error)
}

// decoder is implemented by types that decode themselves from a validated
// or validating pass over their bytes.
type decoder interface {
	decodeJSON(b []byte) error
}

// ownedDecoder is a decoder that can also decode from bytes it may keep:
// ones no one else holds or will change, and that were validated already
// (a response's own copy, in Peer.Call, of a frame parseEnvelope
// accepted). Its strings then share those bytes instead of copying them,
// and are not scanned again, so a 1 MB result is neither copied nor
// validated once more to be read.
type ownedDecoder interface {
	decodeOwned(b []byte) error
}

// dec is one decode's state. owned: the decoder may keep the input (see
// ownedDecoder). altered: encoding what was decoded would not say what
// the input said: a member the codec does not read or read twice (a
// repeated key: a parser that keeps the first would read another
// message), a string the decode changed (invalid UTF-8, an unpaired
// surrogate: both become U+FFFD), a required member missing, a value
// whose encoding differs. Members whose value is null, "", false or {}
// say what their absence says. While altered is false, the input can be
// passed on as it is instead of being encoded again (CallOptions.Wire).
type dec struct{ owned, altered bool }

// keep is v for a decoder that owns it, else a copy.
func (d *dec) keep(v []byte) json.RawMessage { return keep(v, d.owned) }

// once marks bit in seen, and the decode altered when it was set already.
func (d *dec) once(seen *uint16, bit uint16) {
	if *seen&bit != 0 {
		d.altered = true
	}
	*seen |= bit
}

// same marks the decode altered unless v is what encoding got gives.
func (d *dec) same(v []byte, got any) {
	if d.altered {
		return
	}
	b, err := json.Marshal(got)
	if err != nil || string(b) != string(v) {
		d.altered = true
	}
}

// appendField appends `,"key":` (or without the comma for the first field).
func appendKey(b []byte, first *bool, key string) []byte {
	if !*first {
		b = append(b, ',')
	}
	*first = false
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendMarshal(b []byte, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, raw...), nil
}

// appendMeta encodes a _meta object with its keys sorted, as encoding/json
// does, without reflection: tools/call carries one whenever the caller
// traces or asks for progress. Values are written as they are, once
// checked to be JSON.
func appendMeta(b []byte, m Meta) ([]byte, error) {
	var buf [8]string
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendString(b, k)
		b = append(b, ':')
		switch v := m[k]; {
		case len(v) == 0:
			b = append(b, "null"...) // a nil json.RawMessage, as encoding/json writes it
		case !wire.ValidJSON(v):
			return b, fmt.Errorf("_meta %q is not one valid JSON value", k)
		default:
			b = append(b, v...)
		}
	}
	return append(b, '}'), nil
}

// appendMetaMember appends `,"_meta":{...}` when m has members.
func appendMetaMember(b []byte, m Meta) ([]byte, error) {
	if len(m) == 0 {
		return b, nil
	}
	return appendMeta(append(b, `,"_meta":`...), m)
}

// appendArray appends xs as a JSON array, each element by its codec.
func appendArray[T any, P interface {
	*T
	appender
}](b []byte, xs []T) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = P(&xs[i]).appendJSON(b); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// decodeList reads the array (or null) at b[j], the value of field, into
// dst, each element by its codec: an array replaces what dst held (a
// repeated key, [] an empty list) and null makes it nil, as in
// encoding/json. depth is the array's.
func decodeList[T any, P interface {
	*T
	decodeAt(b []byte, i, depth int, d *dec) (int, error)
}](b []byte, j, depth int, d *dec, field string, dst *[]T) (int, error) {
	if j < len(b) && b[j] == '[' {
		*dst = []T{}
		return wire.WalkElements(b, j, depth, func(e int) (int, error) {
			var zero T
			*dst = append(*dst, zero)
			return P(&(*dst)[len(*dst)-1]).decodeAt(b, e, depth, d)
		})
	}
	end, v, err := value(b, j, depth)
	if err == nil && isNull(v) {
		*dst = nil
	} else if err == nil {
		err = typeErr(field, "array", v)
	}
	return end, err
}

// decodeMeta reads a _meta object as encoding/json would, without
// reflection: null makes m nil, and an object's members are added to what
// m holds (a repeated _meta adds to the first); with d.owned, its values
// share v's memory.
func decodeMeta(v []byte, m *Meta, d *dec) error {
	if isNull(v) {
		*m = nil
		return nil
	}
	if len(v) == 0 || v[0] != '{' {
		return typeErr("_meta", "object", v)
	}
	if *m == nil {
		*m = Meta{}
	}
	n := len(*m)
	err := wire.Members(v, func(k, val []byte) error {
		key, err := wire.Unquote(k)
		if err != nil {
			return err
		}
		if strings.Contains(key, "\uFFFD") {
			d.altered = true // a key the decode changed
		}
		(*m)[key] = d.keep(val)
		n++
		return nil
	})
	if n != len(*m) {
		d.altered = true // a key given twice
	}
	return err
}

func (p *CallToolParams) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"name":`...)
	b = wire.AppendString(b, p.Name)
	if len(p.Arguments) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, p.Arguments...)
	}
	b, err := appendMetaMember(b, p.Meta)
	return append(b, '}'), err
}

// EncodeCallToolParams encodes tools/call params without encoding/json
// (the chain's events carry them on every filtered call). Arguments must
// be one JSON value; they are checked, not re-encoded.
func EncodeCallToolParams(p CallToolParams) ([]byte, error) {
	if len(p.Arguments) > 0 && !wire.ValidJSON(p.Arguments) {
		return nil, fmt.Errorf("the arguments of tool %q are not valid JSON", p.Name)
	}
	return p.appendJSON(make([]byte, 0, len(p.Name)+len(p.Arguments)+32))
}

// DecodeCallToolParams decodes tools/call params in one pass, without
// encoding/json. Arguments and _meta values alias b.
func DecodeCallToolParams(b []byte) (CallToolParams, error) {
	var p CallToolParams
	err := p.decode(b, false)
	return p, err
}

// DecodeValidCallToolParams is DecodeCallToolParams for params already
// validated: those a Peer hands to a handler (it validated the frame as
// it read it), or bytes wire.ValidJSON accepted. Their structure is
// walked, but the arguments' strings are not checked a second time (the
// server role's and the gateway's hot path: a 64 KB argument was scanned
// twice). Bytes from anywhere else go to DecodeCallToolParams.
func DecodeValidCallToolParams(b []byte) (CallToolParams, error) {
	var p CallToolParams
	err := p.decode(b, true)
	return p, err
}

func (p *CallToolParams) decodeJSON(b []byte) error { return p.decode(b, false) }

// decode decodes p from b; with valid, b was validated already.
func (p *CallToolParams) decode(b []byte, valid bool) error {
	*p = CallToolParams{}
	member := func(k, v []byte) error {
		var err error
		switch {
		case wire.KeyIs(k, "name"):
			p.Name, err = stringValue(v, "name")
		case wire.KeyIs(k, "arguments"):
			if !isNull(v) {
				p.Arguments = v // b is the request's own copy (Peer.dispatch)
			}
		case wire.KeyIs(k, "_meta"):
			err = decodeMeta(v, &p.Meta, &dec{owned: true}) // b is the request's own copy, as for arguments
		}
		return err
	}
	if valid {
		return wire.ValidMembers(b, member)
	}
	return wire.Members(b, member)
}

func (r *CallToolResult) appendJSON(b []byte) ([]byte, error) {
	b, err := appendArray(append(b, `{"content":`...), r.Content)
	if err != nil {
		return b, err
	}
	if len(r.StructuredContent) > 0 {
		b = append(b, `,"structuredContent":`...)
		b = append(b, r.StructuredContent...)
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	b, err = appendMetaMember(b, r.Meta)
	return append(b, '}'), err
}

func (r *CallToolResult) decodeJSON(b []byte) error  { return r.decode(b, &dec{}) }
func (r *CallToolResult) decodeOwned(b []byte) error { return r.decode(b, &dec{owned: true}) }

// decode decodes r from b; with d.owned, r's strings and raw fields share
// b's memory (see ownedDecoder).
func (r *CallToolResult) decode(b []byte, d *dec) error {
	*r = CallToolResult{}
	var seen uint16
	// One pass: content blocks are read where they are validated.
	err := wire.WalkObject(b, func(k []byte, j int) (int, error) {
		switch {
		case wire.KeyIs(k, "content"):
			d.once(&seen, 1)
			return decodeList(b, j, 1, d, "content", &r.Content)
		case wire.KeyIs(k, "structuredContent"):
			d.once(&seen, 2)
			end, v, err := value(b, j, 1)
			if err == nil && !isNull(v) {
				r.StructuredContent = d.keep(v)
			}
			return end, err
		case wire.KeyIs(k, "isError"):
			d.once(&seen, 4)
			end, v, err := value(b, j, 1)
			if err == nil {
				err = boolValue(v, "isError", &r.IsError)
			}
			return end, err
		case wire.KeyIs(k, "_meta"):
			d.once(&seen, 8)
			end, v, err := value(b, j, 1)
			if err == nil {
				err = decodeMeta(v, &r.Meta, d)
			}
			return end, err
		}
		d.altered = true
		return wire.SkipValue(b, j, 1)
	})
	if r.Content == nil {
		d.altered = true // no content, or null: encoded, it says "content":[]
	}
	return err
}

// MarshalJSON and UnmarshalJSON route encoding/json through the same codecs.
func (r CallToolResult) MarshalJSON() ([]byte, error)  { return r.appendJSON(nil) }
func (r *CallToolResult) UnmarshalJSON(b []byte) error { return r.decodeJSON(b) }

func (c *Content) appendJSON(b []byte) ([]byte, error) {
	if c.Raw != nil {
		return append(b, c.Raw...), nil
	}
	first := true
	b = append(b, '{')
	b = appendKey(b, &first, "type")
	b = wire.AppendString(b, c.Type)
	for _, f := range [...]struct{ k, v string }{
		{"text", c.Text}, {"data", c.Data}, {"mimeType", c.MimeType}, {"uri", c.URI},
		{"name", c.Name}, {"title", c.Title}, {"description", c.Description},
	} {
		if f.v != "" {
			b = appendKey(b, &first, f.k)
			b = wire.AppendString(b, f.v)
		}
	}
	// encoding/json would emit "text":"" for a text block with empty text;
	// the schema requires the field.
	if c.Type == ContentText && c.Text == "" {
		b = appendKey(b, &first, "text")
		b = append(b, `""`...)
	}
	var err error
	if c.Size != nil {
		b = appendKey(b, &first, "size")
		b = strconv.AppendInt(b, *c.Size, 10)
	}
	if len(c.Icons) > 0 {
		b = appendKey(b, &first, "icons")
		if b, err = appendMarshal(b, c.Icons); err != nil {
			return b, err
		}
	}
	if c.Resource != nil {
		b = appendKey(b, &first, "resource")
		if b, err = c.Resource.appendJSON(b); err != nil {
			return b, err
		}
	}
	if c.Annotations != nil {
		b = appendKey(b, &first, "annotations")
		if b, err = appendMarshal(b, c.Annotations); err != nil {
			return b, err
		}
	}
	if len(c.Meta) > 0 {
		b = appendKey(b, &first, "_meta")
		if b, err = appendMeta(b, c.Meta); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func (c *Content) decodeJSON(b []byte) error { return decodeWhole(b, &dec{}, c.decodeAt) }

// decodeWhole runs decodeAt on the one value b holds, refusing anything
// after it, as encoding/json does.
func decodeWhole(b []byte, d *dec, decodeAt func(b []byte, i, depth int, d *dec) (int, error)) error {
	end, err := decodeAt(b, wire.SkipWS(b, 0), 0, d)
	if err != nil {
		return err
	}
	if end = wire.SkipWS(b, end); end != len(b) {
		return wire.SyntaxErr(b, end, "after top-level value")
	}
	return nil
}

// decodeAt reads the content block starting at b[i] and returns the index
// past it, validating as it reads.
func (c *Content) decodeAt(b []byte, i, depth int, d *dec) (int, error) {
	*c = Content{}
	if i >= len(b) || b[i] != '{' {
		end, v, err := value(b, i, depth)
		if err != nil {
			return end, err
		}
		return end, typeErr("content block", "object", v)
	}
	altered := d.altered // a block kept whole (below) is passed on as it came
	var seen uint16
	types := 0       // "type" members
	var other []byte // a key that is "type" to some reader: escaped, or in another case
	end, err := wire.WalkMembers(b, i, depth+1, func(k []byte, j int) (int, error) {
		var dst *string
		var field string
		switch {
		case wire.KeyIs(k, "type"):
			dst, field = &c.Type, "type"
			d.once(&seen, 1)
			types++
		case wire.KeyIs(k, "text"):
			dst, field = &c.Text, "text"
			d.once(&seen, 2)
		case wire.KeyIs(k, "data"):
			dst, field = &c.Data, "data"
			d.once(&seen, 4)
		case wire.KeyIs(k, "mimeType"):
			dst, field = &c.MimeType, "mimeType"
			d.once(&seen, 8)
		case wire.KeyIs(k, "uri"):
			dst, field = &c.URI, "uri"
			d.once(&seen, 16)
		case wire.KeyIs(k, "name"):
			dst, field = &c.Name, "name"
			d.once(&seen, 32)
		case wire.KeyIs(k, "title"):
			dst, field = &c.Title, "title"
			d.once(&seen, 64)
		case wire.KeyIs(k, "description"):
			dst, field = &c.Description, "description"
			d.once(&seen, 128)
		}
		if dst != nil {
			return readString(b, j, depth+1, field, dst, d)
		}
		if wire.KeyIs(k, "resource") { // an embedded resource: often a whole file
			d.once(&seen, 256)
			if j < len(b) && b[j] == '{' {
				if c.Resource == nil { // a repeated "resource" adds to the first, as in encoding/json
					c.Resource = new(ResourceContents)
				}
				return c.Resource.decodeInto(b, j, depth+1, d)
			}
			end, v, err := value(b, j, depth+1)
			if err == nil && isNull(v) {
				c.Resource = nil
			} else if err == nil {
				err = typeErr("resource", "object", v)
			}
			return end, err
		}
		end, v, err := value(b, j, depth+1)
		if err != nil {
			return end, err
		}
		// Rare and small: checked by encoding them again.
		switch {
		case wire.KeyIs(k, "size"):
			d.once(&seen, 512)
			if err = json.Unmarshal(v, &c.Size); err == nil {
				d.same(v, c.Size)
			}
		case wire.KeyIs(k, "icons"):
			d.once(&seen, 1024)
			if err = json.Unmarshal(v, &c.Icons); err == nil {
				d.same(v, c.Icons)
				if len(c.Icons) == 0 {
					d.altered = true // written, [] is left out
				}
			}
		case wire.KeyIs(k, "annotations"):
			d.once(&seen, 2048)
			if err = json.Unmarshal(v, &c.Annotations); err == nil {
				d.same(v, c.Annotations)
			}
		case wire.KeyIs(k, "_meta"):
			d.once(&seen, 4096)
			err = decodeMeta(v, &c.Meta, d)
		default:
			d.altered = true
			if s, uerr := wire.Unquote(k); uerr == nil && strings.EqualFold(s, "type") {
				other = k
			}
		}
		return end, err
	})
	if err != nil {
		return end, err
	}
	switch c.Type {
	case ContentText, ContentImage, ContentAudio, ContentResourceLink, ContentResource:
	default:
		// A block this version does not know is kept whole, so a newer
		// server never fails a call. Nothing in it is sanitized, so its
		// kind must read the same to every client: a parser that keeps
		// the first of a repeated key, or matches keys without case (Go's
		// encoding/json), or unescapes them, could read a text block.
		if types > 1 || other != nil {
			what := `"type" is given more than once`
			if other != nil {
				what = `"type" is also given as ` + string(other)
			}
			return end, fmt.Errorf("content block of type %q: %s, so clients could read it as another kind of block", c.Type, what)
		}
		*c = Content{Type: c.Type, Raw: d.keep(b[i:end])}
		d.altered = altered
	}
	return end, nil
}

func (c Content) MarshalJSON() ([]byte, error)  { return c.appendJSON(nil) }
func (c *Content) UnmarshalJSON(b []byte) error { return c.decodeJSON(b) }

func stringValue(v []byte, field string) (string, error) {
	if isNull(v) {
		return "", nil
	}
	if v[0] != '"' {
		return "", typeErr(field, "string", v)
	}
	return wire.Unquote(v)
}

// readString reads the string (or null) at b[j] into dst, validating it,
// and returns the index past it. With d.owned, a string without escapes
// shares b's memory, and is not validated again (see ownedDecoder).
func readString(b []byte, j, depth int, field string, dst *string, d *dec) (int, error) {
	if j < len(b) && b[j] == '"' {
		owned := d.owned
		scan := wire.SkipString
		if owned {
			scan = wire.StringEnd
		}
		end, escaped, err := scan(b, j)
		if err != nil {
			return end, err
		}
		if inner := b[j+1 : end-1]; !escaped && utf8.Valid(inner) {
			if owned {
				*dst = unsafe.String(unsafe.SliceData(inner), len(inner))
			} else {
				*dst = string(inner)
			}
			return end, nil
		}
		*dst, err = wire.Unquote(b[j:end])
		if !escaped || strings.Contains(*dst, "\uFFFD") {
			d.altered = true // invalid UTF-8 or an unpaired surrogate, replaced (or a U+FFFD sent as one)
		}
		return end, err
	}
	end, v, err := value(b, j, depth)
	if err == nil && !isNull(v) {
		err = typeErr(field, "string", v)
	}
	return end, err
}

// keep is v for a decoder that owns it, else a copy.
func keep(v []byte, owned bool) json.RawMessage {
	if owned {
		return v[:len(v):len(v)] // an append must not write into b
	}
	return clone(v)
}

// value validates the value at b[j] and returns the index past it and the
// value's bytes.
func value(b []byte, j, depth int) (int, []byte, error) {
	end, err := wire.SkipValue(b, j, depth)
	if err != nil {
		return end, nil, err
	}
	return end, b[j:end], nil
}

func boolValue(v []byte, field string, dst *bool) error {
	switch string(v) {
	case "true":
		*dst = true
	case "false", "null":
		*dst = false
	default:
		return typeErr(field, "boolean", v)
	}
	return nil
}

func typeErr(field, want string, v []byte) error {
	got := "value"
	if len(v) > 0 {
		switch v[0] {
		case '"':
			got = "string"
		case '{':
			got = "object"
		case '[':
			got = "array"
		case 't', 'f':
			got = "boolean"
		case 'n':
			got = "null"
		default:
			got = "number"
		}
	}
	return fmt.Errorf("field %q: expected %s, found %s", field, want, got)
}

// appendJSON writes a log notification's params without reflection: a
// gateway forwards every line its servers log, and a server may log on
// every call. Data is raw JSON, checked as json.Marshal would.
func (m LogMessage) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"level":`...)
	b = wire.AppendString(b, string(m.Level))
	if m.Logger != "" {
		b = append(b, `,"logger":`...)
		b = wire.AppendString(b, m.Logger)
	}
	b = append(b, `,"data":`...)
	if len(m.Data) == 0 {
		return append(b, "null}"...), nil
	}
	if !wire.ValidJSON(m.Data) {
		return b, errors.New("log data is not valid JSON")
	}
	return append(append(b, m.Data...), '}'), nil
}

func (m *LogMessage) decodeJSON(b []byte) error {
	*m = LogMessage{}
	return wire.Members(b, func(k, v []byte) error {
		var err error
		switch {
		case wire.KeyIs(k, "level"):
			var s string
			s, err = stringValue(v, "level")
			m.Level = LoggingLevel(s)
		case wire.KeyIs(k, "logger"):
			if !isNull(v) {
				m.Logger, err = stringValue(v, "logger")
			}
		case wire.KeyIs(k, "data"):
			m.Data = v // the notification's own copy (Peer.dispatch)
		}
		return err
	})
}
