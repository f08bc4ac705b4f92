package wasm

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
)

// loopModule is (func (export "f") (loop (br 0))) importing nexus.log,
// built by hand: the smallest module the rewrite takes.
func loopModule(body []byte) []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, 1, 10, 2, 0x60, 0, 0, 0x60, 3, 0x7f, 0x7f, 0x7f, 0) // types: () -> (), (i32 i32 i32) -> ()
	imp := []byte{1, 5, 'n', 'e', 'x', 'u', 's', 3, 'l', 'o', 'g', 0, 1}
	m = append(m, 2, byte(len(imp)))
	m = append(m, imp...)
	m = append(m, 3, 2, 1, 0)            // func 1: type 0
	m = append(m, 7, 5, 1, 1, 'f', 0, 1) // export "f" func 1
	m = append(m, 10, byte(2+len(body)), 1, byte(len(body)))
	return append(m, body...)
}

func TestInterruptible(t *testing.T) {
	forever := loopModule([]byte{0, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}) // loop br 0 end end
	out, err := interruptible(forever)
	if err != nil {
		t.Fatal(err)
	}
	// One check, after the loop's block type, calling import 0 (nexus.log)
	// and counting down global 0, the new one.
	check := fuelCheck(0, 0, yieldHooks[[2]string{"nexus", "log"}])
	if n := bytes.Count(out, check); n != 1 {
		t.Fatalf("%d checks in % x", n, out)
	}
	if !bytes.Contains(out, append([]byte{0x03, 0x40}, check...)) {
		t.Fatalf("the check is not at the head of the loop: % x", out)
	}
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	if _, err := r.CompileModule(ctx, out); err != nil {
		t.Fatalf("the rewrite does not compile: %v", err)
	}

	// Modules the rewrite leaves to wazero.
	noImport := append([]byte("\x00asm\x01\x00\x00\x00"), 1, 4, 1, 0x60, 0, 0, 3, 2, 1, 0, 10, 7, 1, 5, 0, 0x03, 0x40, 0x0b, 0x0b)
	unknownOp := loopModule([]byte{0, 0x06, 0x0b}) // try (exception handling)
	// A hostile module that names the global the rewrite would add, to
	// refill its own fuel, is left to wazero (which refuses it).
	refill := loopModule([]byte{0, 0x03, 0x40, 0x41, 0x7f, 0x24, 0x00, 0x0c, 0x00, 0x0b, 0x0b}) // loop (global.set 0 (i32.const -1)) br 0 end
	for name, code := range map[string][]byte{"no import": noImport, "unknown opcode": unknownOp, "refills its fuel": refill, "truncated": forever[:len(forever)-3]} {
		if _, err := interruptible(code); err == nil {
			t.Errorf("%s: rewritten", name)
		}
	}
}

// TestInterruptibleTestdata: the hand-written test modules that import a
// hook are rewritten, and compile.
func TestInterruptibleTestdata(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	for _, name := range []string{"misbehave"} {
		code, err := os.ReadFile("testdata/" + name + ".wasm")
		if err != nil {
			t.Fatal(err)
		}
		out, err := interruptible(code)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := r.CompileModule(ctx, out); err != nil {
			t.Fatalf("%s: the rewrite does not compile: %v", name, err)
		}
	}
}

// FuzzInterruptible: any input is refused or rewritten into a module
// whose sections parse, without panicking.
func FuzzInterruptible(f *testing.F) {
	f.Add(loopModule([]byte{0, 0x03, 0x40, 0x0c, 0x00, 0x0b, 0x0b}))
	f.Add(loopModule([]byte{1, 1, 0x7f, 0x03, 0x7f, 0x41, 0x01, 0x0b, 0x1a, 0x0b}))
	f.Add(loopModule([]byte{0, 0xfd, 0x0c, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0x1a, 0x0b}))
	f.Add(loopModule([]byte{0, 0x41, 0x00, 0x0e, 0x02, 0x00, 0x00, 0x00, 0x0b}))
	f.Fuzz(func(t *testing.T, code []byte) {
		if len(code) > 4096 {
			return
		}
		out, err := interruptible(code)
		if err != nil {
			return
		}
		if _, ok := sections(out); !ok {
			t.Fatalf("rewrote % x into unparseable % x", code, out)
		}
	})
}
