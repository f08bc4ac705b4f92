package wasm

import (
	"errors"
	"fmt"

	abi "github.com/nexus-mcp/nexus/internal/filterabi"
)

// A call's time limit has to stop a guest that loops forever, and a guest
// in a long loop has to let Go's runtime stop the world for a collection
// now and then (machine code is not preemptible: a collection waiting on
// it stalls every goroutine). wazero can do both itself
// (WithCloseOnContextDone), but it leaves the guest's machine code for Go
// at the head of every loop iteration, which makes a byte-at-a-time loop
// (a JSON parser, a string scan) five to six times slower: OPA's
// evaluator spends 25 µs on a 250-byte event with those checks and 5 µs
// without.
//
// So before compiling, every loop of a module gets a check of its own
// that leaves machine code only every yieldEvery iterations: the module
// gains a mutable i32 global, its fuel, and each loop body starts with
//
//	global.get $fuel
//	i32.const 1
//	i32.sub
//	global.set $fuel
//	global.get $fuel
//	i32.eqz
//	if
//	  (call one of the host's own imports with level/id -1: a yield)
//	  i32.const yieldEvery
//	  global.set $fuel
//	end
//
// The yield is a call into Go: a point where the runtime may stop the
// goroutine, and where the host stops a guest whose deadline passed
// (instance.tripped) by ending the call with the deadline's exit code.
// The import it borrows is one the host implements anyway: nexus.log for
// Nexus ABI modules, env.opa_builtin0 for OPA's; both take -1 as "yield"
// and do nothing else with it, whoever calls them so. Like wazero's own
// checks, only loops are checked: a guest without loops ends, or
// overflows its stack, by itself.
//
// A module the rewrite cannot read (an instruction this decoder does not
// know, no import to borrow) keeps wazero's checks instead; so does one
// whose rewrite the compiler refuses.

// yieldEvery is how many loop iterations a guest runs between yields: a
// yield costs about what 50 iterations of a tight loop do, and 4096
// iterations are a few microseconds.
const yieldEvery = 4096

// yieldLevel is the first argument of a yield call.
const yieldLevel = -1

// yieldHooks are the imports a yield may borrow, with how many i32
// arguments they take and whether they return an i32.
var yieldHooks = map[[2]string]struct {
	args   int
	result bool
}{
	{abi.HostModule, abi.ImportLog}: {3, false},
	{"env", "opa_builtin0"}:         {2, true},
}

// errNotInterruptible is a module the rewrite leaves to wazero's checks.
var errNotInterruptible = errors.New("the module cannot take loop checks")

// interruptible returns code with a fuel check at the head of every loop.
func interruptible(code []byte) ([]byte, error) {
	secs, ok := sections(code)
	if !ok {
		return nil, fmt.Errorf("%w: its sections do not parse", errNotInterruptible)
	}
	imp := imports{hook: -1}
	var globals uint64
	global := -1
	for i, s := range secs {
		switch s.id {
		case 2:
			var err error
			if imp, err = readImports(s.body); err != nil {
				return nil, err
			}
		case 6:
			n, _, ok := uleb(s.body)
			if !ok {
				return nil, fmt.Errorf("%w: its global section does not parse", errNotInterruptible)
			}
			globals, global = n, i
		}
	}
	if imp.hook < 0 {
		return nil, fmt.Errorf("%w: it imports none of the host functions a yield can borrow", errNotInterruptible)
	}
	fuel := imp.globals + globals // the new global's index
	check := fuelCheck(fuel, uint64(imp.hook), yieldHooks[imp.hookName])

	out := make([]section, 0, len(secs)+1)
	for i, s := range secs {
		switch {
		case i == global:
			s.body = appendCounted(s.body, fuelGlobal)
		case s.id == 10:
			body, err := checkLoops(s.body, check, fuel)
			if err != nil {
				return nil, err
			}
			s.body = body
		}
		out = append(out, s)
	}
	if global < 0 {
		out = insertSection(out, section{6, append([]byte{1}, fuelGlobal...)})
	}
	b := append(make([]byte, 0, len(code)+len(code)/4+64), code[:8]...)
	for _, s := range out {
		b = appendSection(b, s)
	}
	return b, nil
}

// fuelGlobal is (global (mut i32) (i32.const yieldEvery)).
var fuelGlobal = append(appendSleb([]byte{0x7f, 0x01, 0x41}, yieldEvery), 0x0b)

// fuelCheck is the code put at the head of every loop: the count goes
// down first, so that the test reads the value just stored (one load and
// one store an iteration; the yield and the refill are off the path).
func fuelCheck(fuel, hook uint64, h struct {
	args   int
	result bool
}) []byte {
	get := appendUleb([]byte{0x23}, fuel)
	set := appendUleb([]byte{0x24}, fuel)
	b := append(append([]byte{}, get...), 0x41, 0x01, 0x6b) // global.get; i32.const 1; i32.sub
	b = append(b, set...)                                   // global.set
	b = append(b, get...)
	b = append(b, 0x45, 0x04, 0x40)             // i32.eqz; if
	b = appendSleb(append(b, 0x41), yieldLevel) // i32.const -1
	for range h.args - 1 {
		b = append(b, 0x41, 0x00) // i32.const 0
	}
	b = appendUleb(append(b, 0x10), hook) // call
	if h.result {
		b = append(b, 0x1a) // drop
	}
	b = appendSleb(append(b, 0x41), yieldEvery) // i32.const yieldEvery
	return append(append(b, set...), 0x0b)      // global.set; end
}

func appendSleb(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// appendCounted adds one entry to a vector-shaped section body.
func appendCounted(body, entry []byte) []byte {
	n, m, _ := uleb(body)
	b := appendUleb(make([]byte, 0, len(body)+len(entry)+2), n+1)
	b = append(b, body[m:]...)
	return append(b, entry...)
}

// insertSection puts s where its id goes in the module's order.
func insertSection(secs []section, s section) []section {
	at := len(secs)
	for i, x := range secs {
		if x.id != 0 && sectionRank(x.id) > sectionRank(s.id) {
			at = i
			break
		}
	}
	secs = append(secs, section{})
	copy(secs[at+1:], secs[at:])
	secs[at] = s
	return secs
}

// imports is what the rewrite needs of an import section.
type imports struct {
	globals  uint64    // imported globals (the module's own come after them)
	hook     int       // the function index of a yield hook; -1 = none
	hookName [2]string // its module and name
}

func readImports(b []byte) (imports, error) {
	imp := imports{hook: -1}
	funcs := 0
	_, err := eachImport(b, func(e importEntry) error {
		switch e.kind {
		case 0:
			if _, hook := yieldHooks[[2]string{e.mod, e.field}]; hook && imp.hook < 0 {
				imp.hook, imp.hookName = funcs, [2]string{e.mod, e.field}
			}
			funcs++
		case 3:
			imp.globals++
		}
		return nil
	})
	var ke *importKindError
	switch {
	case errors.As(err, &ke):
		return imp, fmt.Errorf("%w: it imports a kind %d this decoder does not know", errNotInterruptible, ke.kind)
	case err != nil:
		return imp, fmt.Errorf("%w: its import section does not parse", errNotInterruptible)
	}
	return imp, nil
}

// skipUleb returns the index past the LEB128 number at b[j:]; signed and
// unsigned numbers end the same way.
func skipUleb(b []byte, j int) (int, bool) {
	if j > len(b) {
		return j, false
	}
	_, n, ok := uleb(b[j:])
	return j + n, ok
}

// checkLoops rewrites a code section: each function body gets the check
// after every loop's block type, and its size is written anew.
func checkLoops(b, check []byte, fuel uint64) ([]byte, error) {
	count, j, ok := uleb(b)
	if !ok {
		return nil, fmt.Errorf("%w: its code section does not parse", errNotInterruptible)
	}
	out := appendUleb(make([]byte, 0, len(b)+len(b)/8), count)
	var body []byte
	for f := range count {
		size, m, ok := uleb(b[j:])
		if !ok || j+m+int(size) > len(b) || int(size) < 0 {
			return nil, fmt.Errorf("%w: function body %d does not parse", errNotInterruptible, f)
		}
		j += m
		var err error
		if body, err = checkBody(body[:0], b[j:j+int(size)], check, fuel); err != nil {
			return nil, fmt.Errorf("function body %d: %w", f, err)
		}
		j += int(size)
		out = appendUleb(out, uint64(len(body)))
		out = append(out, body...)
	}
	if j != len(b) {
		return nil, fmt.Errorf("%w: the code section has bytes after its last body", errNotInterruptible)
	}
	return out, nil
}

// checkBody appends body to out with check after every loop header. A
// body that names the fuel global's index is refused: in the module as
// written no such global exists (the compiler would refuse it), and after
// the rewrite it would let the guest refill its own fuel.
func checkBody(out, body, check []byte, fuel uint64) ([]byte, error) {
	bad := func(i int, what string) error {
		return fmt.Errorf("%w: %s at byte %d", errNotInterruptible, what, i)
	}
	// Locals: a vector of (count, type).
	n, i, ok := uleb(body)
	if !ok {
		return nil, bad(0, "unreadable locals")
	}
	for range n {
		if i, ok = skipUleb(body, i); !ok || i >= len(body) {
			return nil, bad(i, "unreadable locals")
		}
		if !isValType(body[i]) {
			return nil, bad(i, fmt.Sprintf("a local of unknown type %#x", body[i]))
		}
		i++
	}
	copied := 0
	for i < len(body) {
		op := body[i]
		next, err := skipInstr(body, i)
		if err != nil {
			return nil, bad(i, err.Error())
		}
		if op == 0x23 || op == 0x24 { // global.get, global.set
			if idx, _, _ := uleb(body[i+1:]); idx >= fuel {
				return nil, bad(i, fmt.Sprintf("global %d, which the module does not define", idx))
			}
		}
		if op == 0x03 { // loop: the check goes after its block type
			out = append(out, body[copied:next]...)
			out = append(out, check...)
			copied = next
		}
		i = next
	}
	return append(out, body[copied:]...), nil
}

func isValType(c byte) bool {
	switch c {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f: // i32 i64 f32 f64 v128 funcref externref
		return true
	}
	return false
}

// skipInstr returns the index past the instruction at b[i].
func skipInstr(b []byte, i int) (int, error) {
	op := b[i]
	i++
	ok := true
	uleb1 := func() { i, ok = skipUleb(b, i) }
	memarg := func() { i, ok = skipMemarg(b, i) }
	fixed := func(n int) {
		i += n
		ok = i <= len(b)
	}
	switch {
	case op == 0x00, op == 0x01, op == 0x05, op == 0x0b, op == 0x0f, op == 0x1a, op == 0x1b, op == 0xd1,
		op >= 0x45 && op <= 0xc4:
		// no immediates
	case op == 0x02, op == 0x03, op == 0x04: // block, loop, if: a block type
		if i >= len(b) {
			return i, errors.New("a block without its type")
		}
		if b[i] == 0x40 || isValType(b[i]) {
			i++
		} else {
			uleb1() // a type index, as a signed number
		}
	case op == 0x0c, op == 0x0d, op == 0x10, op == 0x12, op >= 0x20 && op <= 0x26, op == 0xd2:
		uleb1() // br, br_if, call, return_call, local.*, global.*, table.get/set, ref.func
	case op == 0x0e: // br_table: a vector of labels and the default
		var n uint64
		var m int
		if n, m, ok = uleb(b[i:]); !ok {
			break
		}
		i += m
		for k := uint64(0); k <= n && ok; k++ {
			uleb1()
		}
	case op == 0x11, op == 0x13: // call_indirect, return_call_indirect: type and table
		if uleb1(); ok {
			uleb1()
		}
	case op == 0x1c: // select with types
		var n uint64
		var m int
		if n, m, ok = uleb(b[i:]); ok {
			fixed(m + int(min(n, uint64(len(b)))))
		}
	case op >= 0x28 && op <= 0x3e:
		memarg()
	case op == 0x3f, op == 0x40: // memory.size, memory.grow
		uleb1()
	case op == 0x41, op == 0x42:
		uleb1()
	case op == 0x43:
		fixed(4)
	case op == 0x44:
		fixed(8)
	case op == 0xd0: // ref.null: a heap type
		fixed(1)
	case op == 0xfc:
		return skipFC(b, i)
	case op == 0xfd:
		return skipSIMD(b, i)
	case op == 0xfe:
		var sub uint64
		var m int
		if sub, m, ok = uleb(b[i:]); !ok {
			break
		}
		i += m
		if sub == 0x03 { // atomic.fence
			fixed(1)
		} else {
			memarg()
		}
	default:
		return i, fmt.Errorf("opcode %#x", op)
	}
	if !ok || i > len(b) {
		return i, fmt.Errorf("a truncated instruction %#x", op)
	}
	return i, nil
}

// skipMemarg skips a load's or store's alignment and offset.
func skipMemarg(b []byte, i int) (int, bool) {
	align, m, ok := uleb(b[i:])
	if !ok {
		return i, false
	}
	i += m
	if align&0x40 != 0 { // a memory index follows (multi-memory)
		if i, ok = skipUleb(b, i); !ok {
			return i, false
		}
	}
	return skipUleb(b, i)
}

// skipFC skips the rest of a 0xfc-prefixed instruction (saturating
// truncation, bulk memory, tables).
func skipFC(b []byte, i int) (int, error) {
	sub, m, ok := uleb(b[i:])
	if !ok {
		return i, errors.New("a truncated 0xfc instruction")
	}
	i += m
	var args int
	switch {
	case sub <= 7:
	case sub == 8, sub == 10, sub == 12, sub == 14: // memory.init, memory.copy, table.init, table.copy
		args = 2
	case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
		args = 1
	default:
		return i, fmt.Errorf("opcode 0xfc %d", sub)
	}
	for range args {
		if i, ok = skipUleb(b, i); !ok {
			return i, errors.New("a truncated 0xfc instruction")
		}
	}
	return i, nil
}

// skipSIMD skips the rest of a 0xfd-prefixed (vector) instruction.
func skipSIMD(b []byte, i int) (int, error) {
	sub, m, ok := uleb(b[i:])
	if !ok {
		return i, errors.New("a truncated 0xfd instruction")
	}
	i += m
	memarg := func() bool {
		i, ok = skipMemarg(b, i)
		return ok
	}
	switch {
	case sub <= 11, sub == 92, sub == 93: // loads and stores
		ok = memarg()
	case sub == 12, sub == 13: // v128.const, i8x16.shuffle
		i += 16
	case sub >= 21 && sub <= 34: // extract and replace lane
		i++
	case sub >= 84 && sub <= 91: // load and store lane
		ok = memarg()
		i++
	case sub <= 0x113:
		// no immediates
	default:
		return i, fmt.Errorf("opcode 0xfd %d", sub)
	}
	if !ok || i > len(b) {
		return i, errors.New("a truncated 0xfd instruction")
	}
	return i, nil
}
