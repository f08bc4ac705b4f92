//go:build !wasip1

package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/sdk/event"
)

func TestEditStrings(t *testing.T) {
	doc := []byte(`{"content":[{"type":"text","text":"a \"secret\" here"},{"type":"image","data":"AAAA"}],"structuredContent":{"k":["x","y"],"n":1.5e3,"t":true,"z":null},"isError":false}`)
	var paths []string
	out, changed, err := EditStrings(doc, func(p Path, s string) (string, bool) {
		paths = append(paths, p.String()+"="+s)
		if p.Last() == "text" {
			return strings.ReplaceAll(s, "secret", "[gone]"), true
		}
		return s, false
	})
	if err != nil || !changed {
		t.Fatal(err, changed)
	}
	want := strings.Replace(string(doc), `a \"secret\" here`, `a \"[gone]\" here`, 1)
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if got := strings.Join(paths, " "); got != `content[0].type=text content[0].text=a "secret" here content[1].type=image content[1].data=AAAA structuredContent.k[0]=x structuredContent.k[1]=y` {
		t.Fatal(got)
	}
	// Unchanged: the same bytes come back.
	same, changed, err := EditStrings(doc, func(p Path, s string) (string, bool) { return s, true })
	if err != nil || changed || !bytes.Equal(same, doc) {
		t.Fatal(string(same), changed, err)
	}
	for _, bad := range []string{``, `{`, `{"a":}`, `[1,]`, `"abc`, `{"a":1}x`, `01`, `{"a" 1}`, `"\x"`, "\"\x01\"", strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)} {
		if _, _, err := EditStrings([]byte(bad), nil); !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func FuzzEditStrings(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `[1,"x\n",{"t":"\u00e9\ud83d\ude00"}]`, `"plain"`, `{"content":[{"type":"text","text":"hi"}]}`, `[]`, `{}`, `-0.5e-3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, changed, err := EditStrings(doc, func(p Path, s string) (string, bool) { return strings.ToUpper(s), true })
		valid := json.Valid(doc)
		if err != nil {
			if valid {
				t.Fatalf("valid JSON refused: %q: %v", doc, err)
			}
			return
		}
		if !valid {
			return // EditStrings is lenient about control characters and escapes in strings it skips
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, doc)
		}
		var a, b any
		json.Unmarshal(doc, &a)
		json.Unmarshal(out, &b)
		if !changed && !reflect.DeepEqual(a, b) {
			t.Fatalf("unchanged but different: %q %q", doc, out)
		}
		if !reflect.DeepEqual(upper(a), b) {
			t.Fatalf("edit differs from decoding:\n%q\n%q", doc, out)
		}
	})
}

func upper(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ToUpper(x)
	case []any:
		for i := range x {
			x[i] = upper(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = upper(x[k])
		}
	}
	return v
}

func TestDecodeEvent(t *testing.T) {
	yes := true
	e := event.Event{ABI: 1, Phase: "response", Method: "tools/call", Agent: event.Agent{ID: "a\"b", Permission: "yolo"},
		Server: event.Server{Name: "s", Info: &event.Info{Name: "n", Version: "1"}},
		Tool: &event.Tool{Name: "t", Annotations: &event.Annotations{Title: "T", DestructiveHint: &yes},
			Definition: json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)},
		Params: json.RawMessage(`{"x":[1,2]}`), Result: json.RawMessage(`{"content":[{"type":"text","text":"é\n"}]}`)}
	raw, _ := json.Marshal(e)
	var got event.Event
	if err := DecodeEvent(raw, &got); err != nil || !reflect.DeepEqual(got, e) {
		t.Fatalf("%+v %v", got, err)
	}
	// A key the fast path does not know falls back to encoding/json.
	var odd event.Event
	if err := DecodeEvent([]byte(`{"Phase":"request","method":"m","future":1}`), &odd); err != nil || odd.Phase != "request" || odd.Method != "m" {
		t.Fatalf("%+v %v", odd, err)
	}
}

// The fast decoder knows every field of event.Event: a field added to the
// schema must be added to it too (or it falls back to encoding/json on
// every call).
func TestDecodeEventKnowsTheSchema(t *testing.T) {
	known := map[string][]string{
		"Event":       {"abi", "phase", "method", "agent", "server", "tool", "params", "result", "-"},
		"Agent":       {"id", "permission"},
		"Server":      {"name", "info"},
		"Info":        {"name", "version"},
		"Tool":        {"name", "annotations", "definition"},
		"Annotations": {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"},
	}
	for _, v := range []any{event.Event{}, event.Agent{}, event.Server{}, event.Info{}, event.Tool{}, event.Annotations{}} {
		typ := reflect.TypeOf(v)
		var tags []string
		for i := 0; i < typ.NumField(); i++ {
			tags = append(tags, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
		}
		if !reflect.DeepEqual(tags, known[typ.Name()]) {
			t.Errorf("event.%s has fields %v; DecodeEvent knows %v", typ.Name(), tags, known[typ.Name()])
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"abi":1,"phase":"request","method":"tools/call","agent":{"id":"cli","permission":"trusted"},"server":{"name":"s","info":null},"tool":{"name":"t","annotations":{"destructiveHint":true}},"params":{"a":[1,{"b":null}]}}`))
	f.Add([]byte(`{"tool":null,"result":"x"}`))
	f.Add([]byte(`{"method":"tools/list","tool":{"name":"t","definition":{"name":"t","description":"d"}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast, std event.Event
		errFast := DecodeEvent(raw, &fast)
		errStd := json.Unmarshal(raw, &std)
		if (errFast == nil) != (errStd == nil) {
			t.Fatalf("%q: fast %v, encoding/json %v", raw, errFast, errStd)
		}
		if errStd == nil && !reflect.DeepEqual(normalize(fast), normalize(std)) {
			t.Fatalf("%q:\nfast %+v\nstd  %+v", raw, fast, std)
		}
	})
}

// normalize compacts raw fields so that both decoders compare by value.
func normalize(e event.Event) event.Event {
	raws := []*json.RawMessage{&e.Params, &e.Result}
	if e.Tool != nil {
		t := *e.Tool
		e.Tool = &t
		raws = append(raws, &t.Definition)
	}
	for _, r := range raws {
		if *r != nil {
			var b bytes.Buffer
			if json.Compact(&b, *r) == nil {
				*r = b.Bytes()
			}
		}
	}
	return e
}

func TestScan(t *testing.T) {
	set := NewByteSet(`"\`)
	for _, s := range []string{"", "x", "abcdefgh\"", "abcdefghijklmnop", "abc\\", strings.Repeat("z", 17) + `"`} {
		want := strings.IndexAny(s, `"\`)
		if want < 0 {
			want = len(s)
		}
		if got := Scan(s, 0, set); got != want {
			t.Errorf("%q: %d, want %d", s, got, want)
		}
		if got := Scan([]byte(s), 0, set); got != want {
			t.Errorf("%q bytes: %d, want %d", s, got, want)
		}
	}
	// Every start and length around the 64-byte windows, against a
	// byte-at-a-time loop, with set entries other than 1.
	var odd ByteSet
	odd['x'], odd['y'] = 1, 0x80
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 160; n++ {
		b := make([]byte, n)
		for range 20 {
			for k := range b {
				b[k] = "abcdxy"[r.IntN(6)]
				if r.IntN(4) != 0 {
					b[k] = 'a'
				}
			}
			for i := 0; i <= n; i++ {
				want := n
				for k := i; k < n; k++ {
					if odd[b[k]] != 0 {
						want = k
						break
					}
				}
				if got := Scan(b, i, &odd); got != want {
					t.Fatalf("Scan(%q, %d) = %d, want %d", b, i, got, want)
				}
			}
		}
	}
}

// The native harness runs handlers as the host would: decisions as JSON,
// panics as failures, phases to the right handler, typed config.
func TestHarness(t *testing.T) {
	defer func() { policyFn, sanitizerFn, policyView, sanitizerView, configureFn = nil, nil, nil, nil, nil }()
	var logs []string
	SetLogger(func(l Level, msg string) { logs = append(logs, l.String()+": "+strings.SplitN(msg, "\n", 2)[0]) })
	defer SetLogger(nil)
	if d := Call([]byte(`{"phase":"request"}`)); !strings.Contains(string(d), "registered no handler") {
		t.Fatal(string(d))
	}
	type cfg struct {
		Word string `json:"word"`
	}
	var word string
	Config(func(c cfg) error { word = c.Word; return nil })
	if err := Configure([]byte(`{"word":"no"}`)); err != nil || word != "no" {
		t.Fatal(err, word)
	}
	if err := Configure([]byte(`{"wrod":"no"}`)); err == nil || !strings.Contains(err.Error(), `unknown field "wrod"`) {
		t.Fatal(err)
	}
	PolicyView(func(v *View) event.Decision {
		if v.Tool() == "boom" {
			panic("kaboom")
		}
		return Denyf("%s %s.%s", word, v.Server(), v.Tool())
	})
	if d := Call([]byte(`{"phase":"request","method":"tools/call","server":{"name":"s"},"tool":{"name":"t"}}`)); string(d) != `{"action":"deny","reason":"no s.t"}` {
		t.Fatal(string(d))
	}
	if d := Call([]byte(`{"phase":"request","server":{"name":"s"},"tool":{"name":"boom"}}`)); string(d) != `{"error":"panic: kaboom"}` || len(logs) != 1 || logs[0] != "error: panic: kaboom" {
		t.Fatal(string(d), logs)
	}
	// No sanitizer registered: responses pass.
	if d := Call([]byte(`{"phase":"response","result":{}}`)); string(d) != `{"action":"allow"}` {
		t.Fatal(string(d))
	}
	Sanitizer(func(e *event.Event) event.Decision { return ModifyResult(json.RawMessage(`{"n":1}`), "") })
	if d := Call([]byte(`{"phase":"response","result":{}}`)); string(d) != `{"action":"modify","result":{"n":1}}` {
		t.Fatal(string(d))
	}
	Policy(func(e *event.Event) event.Decision { return Allow() })
	if d := Call([]byte(`not json`)); !strings.Contains(string(d), `"error":"decoding the event`) {
		t.Fatal(string(d))
	}
	if got := string(appendDecision(nil, Fail(errors.New("x\"y")))); got != `{"error":"x\"y"}` {
		t.Fatal(got)
	}
	if !utf8.Valid(appendDecision(nil, Deny("\xff"))) {
		t.Fatal("invalid UTF-8 in a decision")
	}
}

// Thousands of short escaped strings cost about their own size, not a
// buffer sized by the rest of the document each.
func TestEditStringsEscapedAllocations(t *testing.T) {
	var doc strings.Builder
	doc.WriteString(`{"content":[`)
	for i := range 2000 {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"type":"text","text":"line\n%d \"q\""}`, i)
	}
	doc.WriteString(`]}`)
	src := []byte(doc.String())
	seen := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, _, err := EditStrings(src, func(p Path, s string) (string, bool) { seen++; return s, false }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if seen != 4000 {
		t.Fatalf("saw %d strings, want 4000", seen)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
		t.Fatalf("editing a %d KB document allocated %d MB", len(src)>>10, got>>20)
	}
}

// EditStrings' syntax errors give the index of the offending byte,
// whichever part of the decoder found it (len for a document that ends
// too soon).
func TestEditStringsErrorOffsets(t *testing.T) {
	for in, want := range map[string]string{
		"{\"a\":\"\x01\"}": "offset 6: control character in a string",
		`[1.]`:             "offset 3: invalid character ']' after decimal point",
		`[tru]`:            "offset 4: invalid character ']' in literal true",
		`{"a" 1}`:          "offset 5: want ':' after an object key",
		`"abc`:             "offset 4: unterminated string",
		`["a\q"]`:          "offset 5: unknown escape",
	} {
		_, _, err := EditStrings([]byte(in), nil)
		if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", in, err, want)
		}
	}
}
