package mcp

import "github.com/nexus-mcp/nexus/internal/wire"

// Codecs for resources/read results, as codec.go's are for tool calls: a
// resource is often a whole file, read through the gateway and its
// sanitizers, and encoding/json scanned it whole before decoding it by
// reflection, and encoded it by reflection again.

func (r *ResourceContents) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"uri":`...)
	b = wire.AppendString(b, r.URI)
	for _, f := range [...]struct{ k, v string }{{"mimeType", r.MimeType}, {"text", r.Text}, {"blob", r.Blob}} {
		if f.v != "" {
			b = append(b, ',', '"')
			b = append(b, f.k...)
			b = append(b, '"', ':')
			b = wire.AppendString(b, f.v)
		}
	}
	b, err := appendMetaMember(b, r.Meta)
	return append(b, '}'), err
}

// decodeAt decodes the object at b[i] and returns the index past it; with
// d.owned, its strings share b's memory (see ownedDecoder).
func (r *ResourceContents) decodeAt(b []byte, i, depth int, d *dec) (int, error) {
	*r = ResourceContents{}
	return r.decodeInto(b, i, depth, d)
}

// decodeInto is decodeAt onto what r holds: members the object has
// replace r's, the others stay (a repeated embedded resource, read as
// encoding/json reads it).
func (r *ResourceContents) decodeInto(b []byte, i, depth int, d *dec) (int, error) {
	if i >= len(b) || b[i] != '{' {
		end, v, err := value(b, i, depth)
		if err == nil && !isNull(v) {
			err = typeErr("resource contents", "object", v)
		}
		return end, err
	}
	var seen uint16
	end, err := wire.WalkMembers(b, i, depth+1, func(k []byte, j int) (int, error) {
		var dst *string
		var field string
		switch {
		case wire.KeyIs(k, "uri"):
			dst, field = &r.URI, "uri"
			d.once(&seen, 1)
		case wire.KeyIs(k, "mimeType"):
			dst, field = &r.MimeType, "mimeType"
			d.once(&seen, 2)
		case wire.KeyIs(k, "text"):
			dst, field = &r.Text, "text"
			d.once(&seen, 4)
		case wire.KeyIs(k, "blob"):
			dst, field = &r.Blob, "blob"
			d.once(&seen, 8)
		case wire.KeyIs(k, "_meta"):
			d.once(&seen, 16)
			end, v, err := value(b, j, depth+1)
			if err == nil {
				err = decodeMeta(v, &r.Meta, d)
			}
			return end, err
		}
		if dst != nil {
			return readString(b, j, depth+1, field, dst, d)
		}
		d.altered = true
		return wire.SkipValue(b, j, depth+1)
	})
	if seen&1 == 0 {
		d.altered = true // encoded, it would say "uri":""
	}
	return end, err
}

// decodeJSON merges into r, as encoding/json does with a struct.
func (r *ResourceContents) decodeJSON(b []byte) error { return decodeWhole(b, &dec{}, r.decodeInto) }

// MarshalJSON and UnmarshalJSON route encoding/json through the codec.
func (r ResourceContents) MarshalJSON() ([]byte, error)  { return r.appendJSON(nil) }
func (r *ResourceContents) UnmarshalJSON(b []byte) error { return r.decodeJSON(b) }

func (r *ReadResourceResult) appendJSON(b []byte) ([]byte, error) {
	b, err := appendArray(append(b, `{"contents":`...), r.Contents)
	if err != nil {
		return b, err
	}
	b, err = appendMetaMember(b, r.Meta)
	return append(b, '}'), err
}

func (r *ReadResourceResult) decodeJSON(b []byte) error { return decodeWhole(b, &dec{}, r.decodeAt) }
func (r *ReadResourceResult) decodeOwned(b []byte) error {
	return decodeWhole(b, &dec{owned: true}, r.decodeAt)
}

func (r *ReadResourceResult) decodeAt(b []byte, i, depth int, d *dec) (int, error) {
	*r = ReadResourceResult{}
	if i >= len(b) || b[i] != '{' {
		end, v, err := value(b, i, depth)
		if err == nil {
			err = typeErr("resources/read result", "object", v)
		}
		return end, err
	}
	var seen uint16
	end, err := wire.WalkMembers(b, i, depth+1, func(k []byte, j int) (int, error) {
		switch {
		case wire.KeyIs(k, "contents"):
			d.once(&seen, 1)
			return decodeList(b, j, depth+1, d, "contents", &r.Contents)
		case wire.KeyIs(k, "_meta"):
			d.once(&seen, 2)
			end, v, err := value(b, j, depth+1)
			if err == nil {
				err = decodeMeta(v, &r.Meta, d)
			}
			return end, err
		}
		d.altered = true
		return wire.SkipValue(b, j, depth+1)
	})
	if r.Contents == nil {
		d.altered = true // no contents, or null: encoded, it says "contents":[]
	}
	return end, err
}

// MarshalJSON and UnmarshalJSON route encoding/json through the codec.
func (r ReadResourceResult) MarshalJSON() ([]byte, error)  { return r.appendJSON(nil) }
func (r *ReadResourceResult) UnmarshalJSON(b []byte) error { return r.decodeJSON(b) }
