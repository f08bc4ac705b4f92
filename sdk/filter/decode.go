package filter

import (
	"encoding/json"
	"strconv"

	"github.com/nexus-mcp/nexus/internal/wire"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// DecodeEvent decodes an event as encoding/json would, but without
// reflection: Go's encoding/json is slow when compiled to WASM (a small
// event takes it a hundred microseconds and more), and every
// filter.Policy and filter.Sanitizer call decodes one. A key this decoder
// does not know (a field added to the schema after it was written) makes
// it fall back to encoding/json, so it is never wrong, only sometimes
// slower.
func DecodeEvent(raw []byte, e *event.Event) error {
	r := reader{src: raw}
	*e = event.Event{}
	ok, err := r.event(e)
	if err != nil || !ok {
		*e = event.Event{}
		return decodeFallback(raw, e)
	}
	return nil
}

// reader is a minimal pull parser for DecodeEvent. Its methods return
// ok=false for anything outside the fast path (unknown keys, odd types),
// which sends the caller to encoding/json.
type reader struct {
	src []byte
	pos int
}

func (r *reader) ws() { r.pos = wire.SkipWS(r.src, r.pos) }

func (r *reader) peek() byte {
	r.ws()
	if r.pos < len(r.src) {
		return r.src[r.pos]
	}
	return 0
}

func (r *reader) eat(c byte) bool {
	if r.peek() == c {
		r.pos++
		return true
	}
	return false
}

// object calls field for each key of an object; field returns false to
// give up.
func (r *reader) object(field func(key string) bool) bool {
	if r.eat('n') {
		r.pos--
		return r.null()
	}
	if !r.eat('{') {
		return false
	}
	if r.eat('}') {
		return true
	}
	for {
		key, ok := r.str()
		if !ok || !r.eat(':') {
			return false
		}
		if !field(key) {
			return false
		}
		if r.eat('}') {
			return true
		}
		if !r.eat(',') {
			return false
		}
	}
}

func (r *reader) null() bool {
	r.ws()
	if len(r.src)-r.pos >= 4 && string(r.src[r.pos:r.pos+4]) == "null" {
		r.pos += 4
		return true
	}
	return false
}

// str reads a string.
func (r *reader) str() (string, bool) {
	if r.peek() != '"' {
		return "", false
	}
	s, end, _, err := wire.DecodeString(r.src, r.pos)
	if err != nil {
		return "", false
	}
	r.pos = end
	return s, true
}

// strOrNull reads a string, or null as "".
func (r *reader) strOrNull() (string, bool) {
	if r.peek() == 'n' {
		return "", r.null()
	}
	return r.str()
}

// raw returns the next value as it is, checked (no deeper than MaxDepth).
func (r *reader) raw() ([]byte, bool) {
	r.ws()
	start := r.pos
	end, err := wire.SkipValue(r.src, start, wire.MaxDepth-MaxDepth)
	if err != nil {
		return nil, false
	}
	r.pos = end
	return r.src[start:end], true
}

func (r *reader) boolPtr() (*bool, bool) {
	switch r.peek() {
	case 't':
		if len(r.src)-r.pos >= 4 && string(r.src[r.pos:r.pos+4]) == "true" {
			r.pos += 4
			b := true
			return &b, true
		}
	case 'f':
		if len(r.src)-r.pos >= 5 && string(r.src[r.pos:r.pos+5]) == "false" {
			r.pos += 5
			b := false
			return &b, true
		}
	case 'n':
		return nil, r.null()
	}
	return nil, false
}

func (r *reader) integer() (int, bool) {
	r.ws()
	start := r.pos
	for r.pos < len(r.src) && (r.src[r.pos] == '-' || (r.src[r.pos] >= '0' && r.src[r.pos] <= '9')) {
		r.pos++
	}
	n, err := strconv.Atoi(string(r.src[start:r.pos]))
	return n, err == nil
}

func (r *reader) event(e *event.Event) (bool, error) {
	ok := r.object(func(key string) bool {
		var ok bool
		switch key {
		case "abi":
			e.ABI, ok = r.integer()
		case "phase":
			e.Phase, ok = r.strOrNull()
		case "method":
			e.Method, ok = r.strOrNull()
		case "agent":
			ok = r.object(func(k string) bool {
				var ok bool
				switch k {
				case "id":
					e.Agent.ID, ok = r.strOrNull()
				case "permission":
					e.Agent.Permission, ok = r.strOrNull()
				}
				return ok
			})
		case "server":
			ok = r.object(func(k string) bool {
				var ok bool
				switch k {
				case "name":
					e.Server.Name, ok = r.strOrNull()
				case "info":
					if r.peek() == 'n' {
						return r.null()
					}
					e.Server.Info = new(event.Info)
					ok = r.object(func(k string) bool {
						var ok bool
						switch k {
						case "name":
							e.Server.Info.Name, ok = r.strOrNull()
						case "version":
							e.Server.Info.Version, ok = r.strOrNull()
						}
						return ok
					})
				}
				return ok
			})
		case "tool":
			if r.peek() == 'n' {
				return r.null()
			}
			e.Tool = new(event.Tool)
			ok = r.object(func(k string) bool {
				var ok bool
				switch k {
				case "name":
					e.Tool.Name, ok = r.strOrNull()
				case "annotations":
					if r.peek() == 'n' {
						return r.null()
					}
					e.Tool.Annotations = new(event.Annotations)
					ok = r.annotations(e.Tool.Annotations)
				case "definition":
					var b []byte
					b, ok = r.raw()
					e.Tool.Definition = append(json.RawMessage(nil), b...)
				}
				return ok
			})
		case "params":
			var b []byte
			b, ok = r.raw()
			e.Params = append(json.RawMessage(nil), b...)
		case "result":
			var b []byte
			b, ok = r.raw()
			e.Result = append(json.RawMessage(nil), b...)
		}
		return ok
	})
	if !ok {
		return false, nil
	}
	r.ws()
	return r.pos == len(r.src), nil
}

func (r *reader) annotations(a *event.Annotations) bool {
	return r.object(func(k string) bool {
		var ok bool
		switch k {
		case "title":
			a.Title, ok = r.strOrNull()
		case "readOnlyHint":
			a.ReadOnlyHint, ok = r.boolPtr()
		case "destructiveHint":
			a.DestructiveHint, ok = r.boolPtr()
		case "idempotentHint":
			a.IdempotentHint, ok = r.boolPtr()
		case "openWorldHint":
			a.OpenWorldHint, ok = r.boolPtr()
		}
		return ok
	})
}

// decodeAnnotations decodes a tool's annotations as the host function
// "field" sends them; ok=false means "ask decodeFallback".
func decodeAnnotations(raw []byte, a *event.Annotations) bool {
	r := reader{src: raw}
	if !r.annotations(a) {
		return false
	}
	r.ws()
	return r.pos == len(r.src)
}
