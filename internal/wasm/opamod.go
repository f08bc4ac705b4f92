package wasm

import (
	"errors"
	"fmt"
)

// A module built by `opa build -t wasm` imports its linear memory
// (env.memory) instead of defining it. Every instance of a filter needs a
// memory of its own, bounded by memory_mb through the instance's
// allocator, so before compiling, the import is turned into a definition
// with the same limits: the memory keeps index 0 (imported memories come
// first, and it is the only one), the module's own export of it (ABI 1.1
// and later) stays valid, and the instance's memory is made, bounded and
// discarded like any filter's.

// errOPAModule is a module that looks like OPA's but cannot be made to own
// its memory.
var errOPAModule = errors.New("not an OPA policy module")

// section is one section of a module: its id and body.
type section struct {
	id   byte
	body []byte
}

// sections splits a module after its 8-byte header; ok is false for a
// malformed one (the compiler then says what is wrong).
func sections(code []byte) ([]section, bool) {
	if len(code) < 8 {
		return nil, false
	}
	var out []section
	for i := 8; i < len(code); {
		id := code[i]
		size, n, ok := uleb(code[i+1:])
		if !ok || i+1+n+int(size) > len(code) || int(size) < 0 {
			return nil, false
		}
		out = append(out, section{id, code[i+1+n : i+1+n+int(size)]})
		i += 1 + n + int(size)
	}
	return out, true
}

// name reads a length-prefixed name at b[j:].
func name(b []byte, j int) (string, int, bool) {
	if j > len(b) {
		return "", 0, false
	}
	l, m, ok := uleb(b[j:])
	if !ok || j+m+int(l) > len(b) || int(l) < 0 {
		return "", 0, false
	}
	return string(b[j+m : j+m+int(l)]), j + m + int(l), true
}

// exportNames lists the names a module's export section gives.
func exportedNames(body []byte) map[string]bool {
	names := map[string]bool{}
	count, j, ok := uleb(body)
	if !ok {
		return names
	}
	for k := uint64(0); k < count && k < 1<<16; k++ {
		var s string
		if s, j, ok = name(body, j); !ok || j >= len(body) {
			return names
		}
		j++ // kind
		var m int
		if _, m, ok = uleb(body[j:]); !ok {
			return names
		}
		j += m
		names[s] = true
	}
	return names
}

// isOPA reports whether code looks like a module built by `opa build -t
// wasm`: it exports opa_eval_ctx_new and opa_json_dump.
func isOPA(code []byte) bool {
	secs, ok := sections(code)
	if !ok {
		return false
	}
	for _, s := range secs {
		if s.id == 7 {
			names := exportedNames(s.body)
			return names["opa_eval_ctx_new"] && names["opa_json_dump"]
		}
	}
	return false
}

// sectionRank is where a section id goes in the module's order (the data
// count section, 12, sits between elements and code).
func sectionRank(id byte) int {
	if id == 12 {
		return 95
	}
	return int(id) * 10
}

// ownMemory returns code with its imported memory defined instead.
func ownMemory(code []byte) ([]byte, error) {
	secs, ok := sections(code)
	if !ok {
		return nil, fmt.Errorf("%w: the module is malformed", errOPAModule)
	}
	var limits []byte
	for i, s := range secs {
		switch s.id {
		case 2:
			body, lim, err := dropMemoryImport(s.body)
			if err != nil {
				return nil, err
			}
			secs[i].body, limits = body, lim
		case 5:
			if count, _, ok := uleb(s.body); ok && count > 0 {
				return nil, fmt.Errorf("%w: it defines a memory of its own besides importing one", errOPAModule)
			}
		}
	}
	if limits == nil {
		return nil, fmt.Errorf("%w: it does not import its memory (env.memory)", errOPAModule)
	}
	mem := section{5, append([]byte{1}, limits...)}
	out := append(make([]byte, 0, len(code)+16), code[:8]...)
	placed := false
	for _, s := range secs {
		if s.id == 5 {
			continue // an empty memory section: ours replaces it
		}
		if !placed && s.id != 0 && sectionRank(s.id) > sectionRank(5) {
			out = appendSection(out, mem)
			placed = true
		}
		out = appendSection(out, s)
	}
	if !placed {
		out = appendSection(out, mem)
	}
	return out, nil
}

func appendSection(b []byte, s section) []byte {
	b = append(b, s.id)
	b = appendUleb(b, uint64(len(s.body)))
	return append(b, s.body...)
}

// dropMemoryImport removes env.memory from an import section body and
// returns the rest and the memory's limits as encoded.
func dropMemoryImport(b []byte) (body, limits []byte, err error) {
	var kept [][]byte
	end, err := eachImport(b, func(e importEntry) error {
		switch e.kind {
		case 0, 3: // functions and globals stay
			kept = append(kept, e.raw)
			return nil
		case 1:
			return &importKindError{e.mod, e.field, e.kind}
		}
		if flags := e.desc[0]; flags > 1 {
			return fmt.Errorf("%w: its memory is shared or 64-bit (limits flags %#x)", errOPAModule, flags)
		}
		if e.mod != "env" || e.field != "memory" || limits != nil {
			return fmt.Errorf("%w: it imports memory %s.%s; an OPA policy imports only env.memory", errOPAModule, e.mod, e.field)
		}
		limits = append([]byte(nil), e.desc...)
		return nil
	})
	var ke *importKindError
	switch {
	case errors.As(err, &ke):
		return nil, nil, fmt.Errorf("%w: it imports %s.%s of kind %d", errOPAModule, ke.mod, ke.field, ke.kind)
	case errors.Is(err, errImportsMalformed):
		return nil, nil, fmt.Errorf("%w: its import section is malformed", errOPAModule)
	case err != nil:
		return nil, nil, err
	}
	body = appendUleb(nil, uint64(len(kept)))
	for _, e := range kept {
		body = append(body, e...)
	}
	return append(body, b[end:]...), limits, nil
}

// importEntry is one entry of an import section.
type importEntry struct {
	mod, field string
	kind       byte   // 0 function, 1 table, 2 memory, 3 global
	desc       []byte // what follows the kind: a type index, a table's type, limits, a global's type
	raw        []byte // the whole entry as encoded
}

// errImportsMalformed is an import section that does not parse.
var errImportsMalformed = errors.New("the import section is malformed")

// importKindError is an import of a kind the walker cannot step over.
type importKindError struct {
	mod, field string
	kind       byte
}

func (e *importKindError) Error() string {
	return fmt.Sprintf("import %s.%s is of kind %d", e.mod, e.field, e.kind)
}

// eachImport calls fn for each entry of an import section body, in
// order, and returns the offset past the last one. It stops at the first
// error: fn's, errImportsMalformed, or an *importKindError.
func eachImport(b []byte, fn func(importEntry) error) (int, error) {
	count, j, ok := uleb(b)
	if !ok {
		return 0, errImportsMalformed
	}
	for range count {
		start := j
		var e importEntry
		if e.mod, j, ok = name(b, j); !ok {
			return 0, errImportsMalformed
		}
		if e.field, j, ok = name(b, j); !ok || j >= len(b) {
			return 0, errImportsMalformed
		}
		e.kind = b[j]
		j++
		desc := j
		switch e.kind {
		case 0: // function: a type index
			j, ok = skipUleb(b, j)
		case 1: // table: a reference type and limits
			j, ok = skipLimits(b, j+1)
		case 2: // memory: limits
			j, ok = skipLimits(b, j)
		case 3: // global: type and mutability
			j += 2
			ok = j <= len(b)
		default:
			return 0, &importKindError{e.mod, e.field, e.kind}
		}
		if !ok {
			return 0, errImportsMalformed
		}
		e.desc, e.raw = b[desc:j], b[start:j]
		if err := fn(e); err != nil {
			return 0, err
		}
	}
	return j, nil
}

// skipLimits returns the index past the limits (flags, minimum, maybe a
// maximum) at b[j:].
func skipLimits(b []byte, j int) (int, bool) {
	if j >= len(b) {
		return j, false
	}
	flags := b[j]
	j++
	ok := true
	for range 1 + int(flags&1) {
		if j, ok = skipUleb(b, j); !ok {
			return j, false
		}
	}
	return j, true
}
