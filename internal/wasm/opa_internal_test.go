package wasm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// opaShaped is the smallest module shaped like OPA's: it imports
// env.opa_abort and env.memory (2 pages, no maximum) and exports the
// memory.
func opaShaped() []byte {
	m := []byte("\x00asm\x01\x00\x00\x00")
	m = append(m, 1, 5, 1, 0x60, 1, 0x7f, 0) // type (i32) -> ()
	imp := []byte{2}
	imp = append(imp, 3, 'e', 'n', 'v', 9)
	imp = append(imp, "opa_abort"...)
	imp = append(imp, 0, 0)
	imp = append(imp, 3, 'e', 'n', 'v', 6)
	imp = append(imp, "memory"...)
	imp = append(imp, 2, 0, 2)
	m = append(m, 2, byte(len(imp)))
	m = append(m, imp...)
	exp := []byte{1, 6}
	exp = append(exp, "memory"...)
	exp = append(exp, 2, 0)
	m = append(m, 7, byte(len(exp)))
	return append(m, exp...)
}

func TestOwnMemory(t *testing.T) {
	out, err := ownMemory(opaShaped())
	if err != nil {
		t.Fatal(err)
	}
	secs, ok := sections(out)
	if !ok {
		t.Fatal("malformed output")
	}
	var ids []byte
	for _, s := range secs {
		ids = append(ids, s.id)
		if s.id == 5 && !bytes.Equal(s.body, []byte{1, 0, 2}) {
			t.Errorf("memory section %v, want one memory of 2 pages", s.body)
		}
		if s.id == 2 && bytes.Contains(s.body, []byte("memory")) {
			t.Error("the memory import is still there")
		}
	}
	if !bytes.Equal(ids, []byte{1, 2, 5, 7}) {
		t.Errorf("sections %v, want 1 2 5 7", ids)
	}
	if _, err := ownMemory(out); err == nil {
		t.Error("a module that defines its memory was rewritten again")
	}
}

// FuzzOwnMemory: any input is refused or rewritten into a module whose
// sections parse, without panicking.
func FuzzOwnMemory(f *testing.F) {
	f.Add(opaShaped())
	f.Add([]byte("\x00asm\x01\x00\x00\x00"))
	f.Add([]byte("\x00asm\x01\x00\x00\x00\x02\x03\x01\x00"))
	f.Fuzz(func(t *testing.T, code []byte) {
		if len(code) > 4096 {
			return
		}
		out, err := ownMemory(code)
		if err != nil {
			return
		}
		if _, ok := sections(out); !ok {
			t.Fatalf("rewrote % x into unparseable % x", code, out)
		}
	})
}

func bundleOf(t testing.TB, files map[string]string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func TestReadBundle(t *testing.T) {
	mod, data, err := readBundle(bundleOf(t, map[string]string{
		"/policy.wasm":     "\x00asm\x01\x00\x00\x00",
		"/data.json":       `{"a": 1, "x": {"y": 1}}`,
		"/x/z/data.json":   `{"w": 2}`,
		"/ignored/file.md": "hi",
	}))
	if err != nil || string(mod) != "\x00asm\x01\x00\x00\x00" {
		t.Fatal(err)
	}
	x := data["x"].(map[string]any)
	if data["a"] != float64(1) || x["y"] != float64(1) || x["z"].(map[string]any)["w"] != float64(2) {
		t.Errorf("data %v", data)
	}
	for name, files := range map[string]map[string]string{
		"no module": {"/data.json": "{}"},
		"bad data":  {"/policy.wasm": "x", "/data.json": "{"},
		"top array": {"/policy.wasm": "x", "/data.json": "[]"},
	} {
		if _, _, err := readBundle(bundleOf(t, files)); err == nil {
			t.Errorf("%s: read", name)
		}
	}
	if _, _, err := readBundle([]byte{0x1f, 0x8b, 0, 0}); err == nil {
		t.Error("a broken stream was read")
	}
}

func FuzzReadBundle(f *testing.F) {
	f.Add(bundleOf(f, map[string]string{"/policy.wasm": "\x00asm\x01\x00\x00\x00", "/data.json": `{"a":1}`}))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		readBundle(b)
	})
}

// FuzzDecideOPA: any result set decodes into a valid decision or an
// error, never a panic.
func FuzzDecideOPA(f *testing.F) {
	for _, s := range []string{`[]`, `[{"result":true}]`, `[{"result":false}]`, `[{"result":["a","b"]}]`, `[{"result":[]}]`,
		`[{"result":{"action":"modify","params":{"a":1}}}]`, `[{"result":{"action":"deny","reason":"no"}}]`, `[{"result":"x"}]`, `[{"result":1}]`, `{`} {
		f.Add([]byte(s), false)
	}
	flt := &Filter{spec: Spec{Name: "p"}, opa: &opaPolicy{entryName: "p/allow"}}
	f.Fuzz(func(t *testing.T, out []byte, response bool) {
		if len(out) > 4096 {
			return
		}
		phase := event.PhaseRequest
		if response {
			phase = event.PhaseResponse
		}
		d, err := flt.decideOPA(out, phase)
		if err == nil && !d.Valid(phase) {
			t.Fatalf("%s gave an invalid decision %+v", out, d)
		}
	})
}

func TestResultOf(t *testing.T) {
	for in, want := range map[string]string{
		`[]`:                          "",
		`[{"result":true}]`:           "true",
		`[{"result":["a","b"]}]`:      `["a","b"]`,
		`[{"result":{"action":"x"}}]`: `{"action":"x"}`,
		`[{"result":[]}]`:             `[]`,
		`[{"result":tru}]`:            "!",
		`[{"result":1},{"result":2}]`: "!",
		` [{"result":true}]`:          "!",
		`[{"result":true} ]`:          "!",
		`[{"other":true}]`:            "!",
	} {
		r, ok := resultOf([]byte(in))
		got := string(r)
		if !ok {
			got = "!"
		}
		if got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
