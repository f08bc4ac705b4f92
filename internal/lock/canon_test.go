package lock

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The number examples of RFC 8785, appendix B.
func TestCanonicalNumbers(t *testing.T) {
	for bits, want := range map[uint64]string{
		0x0000000000000000: "0", 0x8000000000000000: "0", 0x0000000000000001: "5e-324", 0x8000000000000001: "-5e-324",
		0x7fefffffffffffff: "1.7976931348623157e+308", 0xffefffffffffffff: "-1.7976931348623157e+308",
		0x4340000000000000: "9007199254740992", 0xc340000000000000: "-9007199254740992", 0x4430000000000000: "295147905179352830000",
		0x44b52d02c7e14af5: "9.999999999999997e+22", 0x44b52d02c7e14af6: "1e+23",
		0x444b1ae4d6e2ef4e: "999999999999999700000", 0x444b1ae4d6e2ef4f: "999999999999999900000", 0x444b1ae4d6e2ef50: "1e+21",
		0x3eb0c6f7a0b5ed8c: "9.999999999999997e-7", 0x3eb0c6f7a0b5ed8d: "0.000001", 0x41b3de4355555553: "333333333.3333332",
		0x41b3de4355555554: "333333333.33333325", 0x41b3de4355555555: "333333333.3333333", 0x41b3de4355555556: "333333333.3333334",
		0x41b3de4355555557: "333333333.33333343", 0xbecbf647612f3696: "-0.0000033333333333333333", 0x43143ff3c1cb0959: "1424953923781206.2",
	} {
		f := math.Float64frombits(bits)
		lit, _ := json.Marshal(f) // some literal of the same value
		if bits == 0x8000000000000000 {
			lit = []byte("-0")
		}
		got, err := canonical(nil, lit)
		if err != nil || string(got) != want {
			t.Errorf("%016x (%s): got %s %v, want %s", bits, lit, got, err, want)
		}
	}
}

// A definition in any layout comes out as RFC 8785's example does: keys in
// UTF-16 order, strings with only the required escapes.
func TestCanonical(t *testing.T) {
	in := `{ "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001, -0, 10],
	  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
	  "literals": [null, true, false], "\u20ac": 1, "\ud83d\ude00": 2, "\ufb33": 3, "a\u2028b": "\u2028" }`
	got, err := canonical(nil, []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	// The oracle is the library; the order of the keys (by UTF-16 code
	// units: U+1F600, a surrogate pair from D83D, before U+FB33, unlike in
	// UTF-8) is checked by hand.
	want, err := jcs.Transform([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(got), "\"\u20ac\":1,\"\U0001F600\":2,\"\uFB33\":3}") {
		t.Errorf("keys out of UTF-16 order: %s", got)
	}
	if string(got) != string(want) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{`{"a":1,"a":2}`, `"\ud800"`, `"\udc00x"`, "\"\xff\"", `1e400`, `[1,]`, `{"a" 1}`, `01`, `1.`, `"a` + "\x01" + `"`, strings.Repeat("[", maxDepth+2)} {
		if _, err := canonical(nil, []byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

// FuzzCanonical holds canonical to gowebpki/jcs: what it accepts, it
// writes byte for byte as the library does.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":[1,2.5,{"z":null,"a":"\u00e9\n"}],"a":true}`, `-0.0e+0`, `"\ud83d\ude00"`, `{"\u20ac":1,"\ufb33":2,"😀":3}`,
		`123456789012345678`, `[1e21,1e-7,0.1]`, `"\u001f\u007f"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		got, err := canonical(nil, in)
		if err != nil {
			return
		}
		want, err := jcs.Transform(in)
		if err != nil {
			t.Fatalf("%q: canonical accepted what jcs refuses (%v): %s", in, err, got)
		}
		if string(got) != string(want) {
			t.Fatalf("%q:\ngot  %s\nwant %s", in, got, want)
		}
	})
}

// refTool is ToolItem as the lockfile defines it, the slow way: the sha256
// of gowebpki/jcs's canonical JSON of the definition as a map.
func refTool(t mcp.Tool) (sum, rest string, err error) {
	def := map[string]any{}
	if t.Title != "" {
		def["title"] = t.Title
	}
	if len(t.InputSchema) > 0 {
		def["inputSchema"] = t.InputSchema
	}
	if len(t.OutputSchema) > 0 {
		def["outputSchema"] = t.OutputSchema
	}
	if t.Annotations != nil {
		def["annotations"] = t.Annotations
	}
	r, err := json.Marshal(def)
	if err != nil {
		return "", "", err
	}
	cr, err := jcs.Transform(r)
	if err != nil {
		return "", "", err
	}
	if t.Description != "" {
		def["description"] = t.Description
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return "", "", err
	}
	canon, err := jcs.Transform(raw)
	if err != nil {
		return "", "", err
	}
	h := sha256.Sum256(canon)
	return hex.EncodeToString(h[:]), string(cr), nil
}

// FuzzToolItem holds ToolItem to its definition: what it pins is what
// refTool hashes.
func FuzzToolItem(f *testing.F) {
	f.Add("Echo <b>&</b> \u2028 back.", "Echo", `{"type":"object","properties":{"m":{"type":"string","default":1.50}}}`, "")
	f.Add("", "", `{}`, `{"type":"object","required":["a"]}`)
	f.Add("d", "t\x01", `{"€":1,"😀":2,"\ufb33":3}`, `[1e21]`)
	f.Fuzz(func(t *testing.T, desc, title, in, out string) {
		if len(desc)+len(title)+len(in)+len(out) > 4096 {
			return
		}
		yes := true
		tool := mcp.Tool{Name: "x", Description: desc, Title: title, InputSchema: json.RawMessage(in), OutputSchema: json.RawMessage(out),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &yes}}
		if out == "" {
			tool.OutputSchema = nil
		}
		it, err := ToolItem(tool)
		if err != nil {
			return
		}
		sum, rest, err := refTool(tool)
		if err != nil {
			t.Fatalf("ToolItem pinned what the reference cannot: %v", err)
		}
		if it.SHA256 != sum || it.Rest != rest {
			t.Fatalf("got %s %s\nwant %s %s", it.SHA256, it.Rest, sum, rest)
		}
	})
}

// BenchmarkToolItem is pinning one tool of the 1,000-tool benchmark,
// against gowebpki/jcs's canonical JSON of the same definition.
func BenchmarkToolItem(b *testing.B) {
	yes := true
	tool := mcp.Tool{Name: "tool_0001", Title: "Tool 1", Description: "Tool number 1 of the catalog: it reads a record by id and returns it as JSON, with its history when asked.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The record's id."},` +
			`"history":{"type":"boolean","description":"Include the record's history.","default":false},"limit":{"type":"integer","minimum":1,"maximum":100}},"required":["id"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &yes}}
	b.Run("ToolItem", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ToolItem(tool); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := refTool(tool); err != nil {
				b.Fatal(err)
			}
		}
	})
}
