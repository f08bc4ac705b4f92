package wasm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
)

// growModule is a hand-assembled module with one table (funcref, min 1, no
// maximum) and an exported function grow(n) = table.grow(ref.null, n).
func growModule(min byte, withMax bool, max byte) []byte {
	table := []byte{0x01, 0x70, 0x00, min}
	if withMax {
		table = []byte{0x01, 0x70, 0x01, min, max}
	}
	b := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	b = append(b, 0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f) // type: (i32) -> i32
	b = append(b, 0x03, 0x02, 0x01, 0x00)                         // func 0: type 0
	b = append(b, 0x04, byte(len(table)))
	b = append(b, table...)
	b = append(b, 0x07, 0x08, 0x01, 0x04, 'g', 'r', 'o', 'w', 0x00, 0x00) // export "grow" func 0
	code := []byte{0x00, 0xd0, 0x70, 0x20, 0x00, 0xfc, 0x0f, 0x00, 0x0b}  // ref.null func; local.get 0; table.grow 0; end
	b = append(b, 0x0a, byte(len(code)+2), 0x01, byte(len(code)))
	return append(b, code...)
}

func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var res int64
	if f := bytes.Fields(b); len(f) > 1 {
		for _, c := range f[1] { // resident pages
			res = res*10 + int64(c-'0')
		}
	}
	return res * int64(os.Getpagesize())
}

// A guest that grows its table by a huge count gets -1, fast, and the
// host's memory does not move (issue 20, item 2).
func TestTableGrowthBounded(t *testing.T) {
	ctx := context.Background()
	capped, err := capTables(growModule(1, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	mod, err := r.Instantiate(ctx, capped)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := rss()
	start := time.Now()
	res, err := mod.ExportedFunction("grow").Call(ctx, 100_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if int32(res[0]) != -1 {
		t.Errorf("table.grow by 1e8 returned %d, want -1 (refused)", int32(res[0]))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refused growth took %s", d)
	}
	if grew := rss() - before; runtime.GOOS == "linux" && grew > 64<<20 {
		t.Errorf("RSS grew by %d MB", grew>>20)
	}

	// A declared maximum within the bound is kept.
	capped, _ = capTables(growModule(1, true, 3))
	mod2, err := r.Instantiate(ctx, capped)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := mod2.ExportedFunction("grow").Call(ctx, 2); int32(res[0]) != 1 {
		t.Errorf("growing within the declared maximum: %d", int32(res[0]))
	}
}

func TestTableRefused(t *testing.T) {
	// A minimum of 2^21 elements (three LEB bytes).
	big := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x04, 0x07, 0x01, 0x70, 0x00, 0x80, 0x80, 0x80, 0x01}
	if _, err := capTables(big); !errors.Is(err, errTable) {
		t.Errorf("a table of 2^21 elements: %v", err)
	}
	imported := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x02, 0x0a, 0x01, 0x01, 'm', 0x01, 't', 0x01, 0x70, 0x00, 0x01, 0x00}
	if _, err := capTables(imported); !errors.Is(err, errTable) {
		t.Errorf("an imported table: %v", err)
	}
	// Garbage is left for the compiler to report.
	if out, err := capTables([]byte("not wasm at all")); err != nil || string(out) != "not wasm at all" {
		t.Errorf("garbage: %q %v", out, err)
	}
}

func FuzzCapTables(f *testing.F) {
	f.Add(growModule(1, false, 0))
	f.Add(growModule(1, true, 3))
	f.Add([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x04, 0x07, 0x01, 0x70, 0x00, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return
		}
		out, err := capTables(b)
		if err == nil && out == nil {
			t.Fatal("no module and no error")
		}
	})
}
