package wasm

import (
	"errors"
	"fmt"
)

// Tables escape memory_mb: a table's elements live outside linear memory,
// and table.grow with a huge count allocates them where the call's
// deadline cannot interrupt. So before compiling, every table of a module
// gets a maximum: its declared one if that is within MaxTableElems, else
// its minimum (Go's compiler declares a table with no maximum and never
// grows it). A table.grow past the maximum then fails in the guest (-1)
// instead of allocating. A table whose minimum is over the bound, or an
// imported table, refuses the module at load.

// MaxTableElems bounds the elements of one table (8 bytes or more each).
const MaxTableElems = 1 << 20

var errTable = errors.New("table over the limit")

// capTables returns code with every defined table given a maximum; an
// error says which table is refused and why.
func capTables(code []byte) ([]byte, error) {
	if len(code) < 8 {
		return code, nil // not a module: the compiler says so
	}
	out := make([]byte, 0, len(code)+16)
	out = append(out, code[:8]...)
	i := 8
	for i < len(code) {
		id := code[i]
		size, n, ok := uleb(code[i+1:])
		if !ok || i+1+n+int(size) > len(code) {
			return code, nil // malformed: the compiler reports it
		}
		body := code[i+1+n : i+1+n+int(size)]
		switch id {
		case 2: // imports: a table from outside is not the filter's to size
			if err := checkImports(body); err != nil {
				return nil, err
			}
			out = append(out, code[i:i+1+n+int(size)]...)
		case 4: // tables
			nb, err := capTableSection(body)
			if err != nil {
				return nil, err
			}
			out = append(out, id)
			out = appendUleb(out, uint64(len(nb)))
			out = append(out, nb...)
		default:
			out = append(out, code[i:i+1+n+int(size)]...)
		}
		i += 1 + n + int(size)
	}
	return out, nil
}

func capTableSection(b []byte) ([]byte, error) {
	count, n, ok := uleb(b)
	if !ok {
		return b, nil
	}
	out := appendUleb(nil, count)
	j := n
	for t := uint64(0); t < count; t++ {
		if j+2 > len(b) {
			return b, nil
		}
		elem, flags := b[j], b[j+1]
		j += 2
		min, m, ok := uleb(b[j:])
		if !ok {
			return b, nil
		}
		j += m
		max := min
		if flags&1 != 0 {
			declared, m, ok := uleb(b[j:])
			if !ok {
				return b, nil
			}
			j += m
			max = declared
		}
		if min > MaxTableElems {
			return nil, fmt.Errorf("%w: table %d declares %d elements; a filter's tables may hold at most %d", errTable, t, min, MaxTableElems)
		}
		if max > MaxTableElems {
			max = MaxTableElems
		}
		out = append(out, elem, 1) // flags: a maximum follows (table64 and shared are not supported)
		out = appendUleb(out, min)
		out = appendUleb(out, max)
	}
	return append(out, b[j:]...), nil
}

// checkImports refuses an imported table. An import section that does
// not parse is left to the compiler, which says what is wrong.
func checkImports(b []byte) error {
	_, err := eachImport(b, func(e importEntry) error {
		if e.kind == 1 {
			return fmt.Errorf("%w: the module imports a table; a filter's tables are its own, bounded ones", errTable)
		}
		return nil
	})
	if errors.Is(err, errTable) {
		return err
	}
	return nil
}

func uleb(b []byte) (uint64, int, bool) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return v, i + 1, true
		}
	}
	return 0, 0, false
}

func appendUleb(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}
