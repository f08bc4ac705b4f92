package mcp

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// Defined types without the hand-written methods: what encoding/json does
// by reflection, to hold the codecs to.
type (
	plainContent    Content
	plainCallResult struct {
		Content           []plainContent  `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
		IsError           bool            `json:"isError,omitempty"`
		Meta              Meta            `json:"_meta,omitempty"`
	}
)

func sameJSON(t *testing.T, a, b []byte) {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("codec output is not JSON: %v\n%s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("codec: %s\nencoding/json: %s", a, b)
	}
}

func FuzzContentCodec(f *testing.F) {
	f.Add("text", "héllo \"w\"\n\x01 <b>&", "", "", "", false)
	f.Add("image", "", "AAAA", "image/png", "", true)
	f.Add("resource_link", "", "", "text/plain", "file:///a\u2028b", false)
	f.Add("text", "bad \xff utf8", "", "", "", false)
	f.Fuzz(func(t *testing.T, typ, text, data, mime, uri string, isErr bool) {
		switch typ {
		case ContentText, ContentImage, ContentAudio, ContentResourceLink, ContentResource:
		default:
			typ = ContentText
		}
		size := int64(len(text))
		c := Content{Type: typ, Text: text, Data: data, MimeType: mime, URI: uri, Name: mime, Size: &size,
			Annotations: &Annotations{Audience: []string{"user"}}}
		got, err := c.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plainContent(c))
		if typ == ContentText && text == "" {
			// The schema requires "text"; encoding/json's omitempty drops it.
			var m map[string]any
			json.Unmarshal(want, &m)
			m["text"] = ""
			want, _ = json.Marshal(m)
		}
		sameJSON(t, got, want)

		r := CallToolResult{Content: []Content{c, {Type: "future", Raw: json.RawMessage(`{"type":"future","x":1}`)}}, IsError: isErr,
			StructuredContent: json.RawMessage(`{"n":1}`)}
		got, err = r.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		var back CallToolResult
		if err := back.decodeJSON(got); err != nil {
			t.Fatalf("decode own output: %v\n%s", err, got)
		}
		if back.IsError != isErr || len(back.Content) != 2 || back.Content[1].Type != "future" || string(back.Content[1].Raw) != `{"type":"future","x":1}` {
			t.Fatalf("round trip: %+v", back)
		}
		if utf8.ValidString(text) && back.Content[0].Text != text {
			t.Fatalf("text %q came back as %q", text, back.Content[0].Text)
		}
		// Decoding agrees with encoding/json on the same bytes.
		var plain plainCallResult
		if err := json.Unmarshal(got, &plain); err != nil {
			t.Fatal(err)
		}
		if plain.Content[0].Text != back.Content[0].Text || plain.Content[0].URI != back.Content[0].URI {
			t.Fatalf("decoders disagree: %q vs %q", plain.Content[0].Text, back.Content[0].Text)
		}
	})
}

func TestCodecRejectsWrongTypes(t *testing.T) {
	for _, in := range []string{`{"content":"x"}`, `{"content":[1]}`, `{"isError":"yes"}`, `{"content":[{"type":1}]}`, `{"content":[{"type":"text","text":"a"}]`} {
		var r CallToolResult
		if err := r.decodeJSON([]byte(in)); err == nil {
			t.Errorf("%s accepted", in)
		}
		var plain plainCallResult
		if err := json.Unmarshal([]byte(in), &plain); err == nil && in != `{"content":[1]}` {
			t.Errorf("encoding/json accepts %s; the codec should too", in)
		}
	}
	var p CallToolParams
	if err := p.decodeJSON([]byte(`{"name":5}`)); err == nil {
		t.Error("numeric name accepted")
	}
	if err := p.decodeJSON([]byte(`{"name":"a","arguments":{"x":[1]},"_meta":{"progressToken":3}}`)); err != nil || p.Name != "a" || string(p.Arguments) != `{"x":[1]}` || string(p.Meta["progressToken"]) != "3" {
		t.Errorf("%v %+v", err, p)
	}
	b, _ := p.appendJSON(nil)
	sameJSON(t, b, []byte(`{"name":"a","arguments":{"x":[1]},"_meta":{"progressToken":3}}`))
}

func BenchmarkCallToolResult(b *testing.B) {
	raw := []byte(`{"content":[{"type":"text","text":"hello"}],"isError":false}`)
	b.Run("codec-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r CallToolResult
			if err := r.decodeJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r plainCallResult
			if err := json.Unmarshal(raw, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	r := CallToolResult{Content: []Content{TextContent("hello")}}
	b.Run("codec-encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			buf, _ = r.appendJSON(buf[:0])
		}
	})
	b.Run("encoding-json-encode", func(b *testing.B) {
		b.ReportAllocs()
		p := plainCallResult{Content: []plainContent{plainContent(r.Content[0])}}
		for b.Loop() {
			json.Marshal(p)
		}
	})
}

func TestEncodeCallToolParams(t *testing.T) {
	b, err := EncodeCallToolParams(CallToolParams{Name: "a\"b", Arguments: json.RawMessage(` {"x": [1, 2]} `)})
	if err != nil || string(b) != `{"name":"a\"b","arguments": {"x": [1, 2]} }` {
		t.Fatalf("%s %v", b, err)
	}
	var p CallToolParams
	if err := json.Unmarshal(b, &p); err != nil || p.Name != `a"b` {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := EncodeCallToolParams(CallToolParams{Name: "t", Arguments: json.RawMessage(`{"x":`)}); err == nil || !strings.Contains(err.Error(), `tool "t" are not valid JSON`) {
		t.Fatal(err)
	}
	if b, err := EncodeCallToolParams(CallToolParams{Name: "t"}); err != nil || string(b) != `{"name":"t"}` {
		t.Fatalf("%s %v", b, err)
	}
}

// BenchmarkAppendString: a result's text as the server role and the
// gateway encode it: plain, with a line break per line, and non-ASCII.
func BenchmarkAppendString(b *testing.B) {
	line := strings.Repeat("x", 60) + "\n"
	for _, c := range []struct{ name, s string }{
		{"short", "hello"},
		{"64KB-plain", strings.Repeat("a", 64<<10)},
		{"64KB-lines", strings.Repeat(line, (64<<10)/len(line))},
		{"64KB-utf8", strings.Repeat("héllo wörld ", (64<<10)/14)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			buf := make([]byte, 0, 2*len(c.s)+2)
			for b.Loop() {
				buf = wire.AppendString(buf[:0], c.s)
			}
		})
	}
}

// FuzzAppendString: the encoder's output is what encoding/json decodes
// back to the input (invalid UTF-8 as U+FFFD), at every alignment of the
// word-wise path.
// FuzzDecodeValidParams: on params that are valid JSON, the decoder that
// trusts them reads what the checking one reads; on any bytes it returns.
func FuzzDecodeValidParams(f *testing.F) {
	for _, s := range []string{
		`{"name":"echo","arguments":{"message":"a\n\"b\"","n":[1,{"x":null}]},"_meta":{"progressToken":7}}`,
		`{"name":"x","arguments":null}`, `{"name":"\u0078"}`, `{"arguments":"not an object"}`, `{"name":"x",}`, `[]`, `{"name":"x"} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, gerr := DecodeValidCallToolParams(b)
		if !json.Valid(b) {
			return
		}
		want, werr := DecodeCallToolParams(b)
		if (gerr == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: trusting %+v %v, checking %+v %v", b, got, gerr, want, werr)
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "hello", strings.Repeat("a", 17) + "\"" + strings.Repeat("b", 9), "abcdefgh\x7f\u2028ij\xffkl\n", "12345678é12345678\\",
		strings.Repeat("a", 20) + "\u2028" + strings.Repeat("b", 20) + "\xff" + strings.Repeat("c", 30) + "\x01" + strings.Repeat("d", 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		if err := json.Unmarshal(wire.AppendString(nil, s), &got); err != nil {
			t.Fatalf("%q: encoded to invalid JSON: %v", s, err)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("%q: round trip gave %q", s, got)
		}
	})
}

// plainLog is LogMessage without its codec.
type plainLog LogMessage

// The log notification's codec writes and reads what encoding/json does,
// and refuses data that is not JSON as json.Marshal would.
func FuzzLogCodec(f *testing.F) {
	f.Add("info", "echo", `{"msg":"hi","n":[1,2]}`)
	f.Add("warning", "", `"a \"quoted\" line\n"`)
	f.Add("error", "x\xffy\u2028", `null`)
	f.Add("debug", "", ``)
	f.Add("info", "l", `{"a":`)
	f.Fuzz(func(t *testing.T, level, logger, data string) {
		m := LogMessage{Level: LoggingLevel(level), Logger: logger, Data: json.RawMessage(data)}
		if data == "" {
			m.Data = nil
		}
		got, err := m.appendJSON(nil)
		want, werr := json.Marshal(plainLog(m))
		if (err != nil) != (werr != nil) {
			t.Fatalf("codec error %v, encoding/json error %v", err, werr)
		}
		if err != nil {
			return
		}
		sameJSON(t, got, want)

		var back, plain LogMessage
		if err := back.decodeJSON(got); err != nil {
			t.Fatalf("decode own output: %v\n%s", err, got)
		}
		if err := json.Unmarshal(got, (*plainLog)(&plain)); err != nil {
			t.Fatal(err)
		}
		if back.Level != plain.Level || back.Logger != plain.Logger || !sameRaw(back.Data, plain.Data) {
			t.Fatalf("decoders disagree: %+v vs %+v", back, plain)
		}
	})
}

// sameRaw compares two raw JSON values by what they hold.
func sameRaw(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// FuzzMetaCodec: _meta is read as encoding/json reads it into a Meta
// (the same members, the same refusals of what is not an object), and
// what appendMeta writes reads back as the same members.
func FuzzMetaCodec(f *testing.F) {
	for _, s := range []string{`{"progressToken":3}`, `null`, `{}`, `[1]`, `"x"`, `{"a":1,"a":{"b":[true]}}`,
		`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","k\u00e9y\n":  [ 1 , 2 ] }`, `{"\ud800":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4<<10 || !wire.ValidJSON(in) {
			return // decodeMeta gets a value the envelope's scan validated
		}
		in = bytes.TrimSpace(in) // as a member's value comes
		var got, want Meta
		err := decodeMeta(in, &got, &dec{})
		werr := json.Unmarshal(in, &want)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: codec error %v, encoding/json error %v", in, err, werr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: codec %q, encoding/json %q", in, got, want)
		}
		out, err := appendMeta(nil, got)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			return // Meta(nil) is never written: callers check len first
		}
		var back Meta
		if err := json.Unmarshal(out, &back); err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("%s wrote %s, read back %q (%v)", in, out, back, err)
		}
	})
}

// A _meta value that is not JSON is refused, not written into a frame.
func TestAppendMetaRefusesBadValues(t *testing.T) {
	if _, err := appendMeta(nil, Meta{"progressToken": json.RawMessage(`{oops`)}); err == nil || !strings.Contains(err.Error(), `"progressToken"`) {
		t.Errorf("got %v", err)
	}
	out, err := appendMeta(nil, Meta{"b": json.RawMessage(`2`), "a": nil})
	if err != nil || string(out) != `{"a":null,"b":2}` {
		t.Errorf("got %s %v", out, err)
	}
}

// plainReadResult is ReadResourceResult as encoding/json sees it.
type (
	plainResourceContents ResourceContents
	plainReadResult       struct {
		Contents []plainResourceContents `json:"contents"`
		Meta     Meta                    `json:"_meta,omitempty"`
	}
)

// FuzzResourceCodec: a resources/read result is written as encoding/json
// writes it (semantically), and read as encoding/json reads it: the same
// values from the same bytes, the same refusals.
func FuzzResourceCodec(f *testing.F) {
	f.Add("file:///a.txt", "text/plain", "héllo \"w\"\n\x01 <b>&", "", []byte(`{"contents":[{"uri":"file:///a","text":"x"}]}`))
	f.Add("file:///b.png", "image/png", "", "AAAA", []byte(`{"contents":[{"uri":"u","blob":"QQ==","_meta":{"k":1}}],"_meta":{"a":"b"},"future":[1]}`))
	f.Add("", "", "bad \xff utf8", "", []byte(`{"contents":null}`))
	f.Add("u", "", "", "", []byte(`{"contents":[null,{"uri":"\u00e9\ud800"}]}`))
	f.Add("u", "", "", "", []byte(`{"contents":"x"}`))
	f.Add("u", "", "", "", []byte(`{"contents":[{"text":5}]}`))
	// Repeated keys read as encoding/json reads them: a later list or null
	// replaces, a later _meta adds.
	f.Add("u", "", "", "", []byte(`{"contents":[{"uri":"a"}],"contents":null}`))
	f.Add("u", "", "", "", []byte(`{"contents":[],"_meta":{"a":1},"_meta":{"b":2}}`))
	f.Add("u", "", "", "", []byte(`{"contents":[{"uri":"a","_meta":{"x":1},"_meta":null}],"contents":[{"uri":"b"},{"text":"t"}]}`))
	f.Fuzz(func(t *testing.T, uri, mime, text, blob string, in []byte) {
		r := ReadResourceResult{Contents: []ResourceContents{{URI: uri, MimeType: mime, Text: text, Blob: blob, Meta: Meta{"n": json.RawMessage(`1`)}}}}
		got, err := r.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		p := plainReadResult{Contents: []plainResourceContents{plainResourceContents(r.Contents[0])}}
		want, _ := json.Marshal(p)
		sameJSON(t, got, want)
		var back ReadResourceResult
		if err := back.decodeJSON(got); err != nil {
			t.Fatalf("decode own output: %v\n%s", err, got)
		}
		if utf8.ValidString(text) && utf8.ValidString(uri) && (back.Contents[0].Text != text || back.Contents[0].URI != uri) {
			t.Fatalf("came back as %+v", back.Contents[0])
		}

		if len(in) > 4<<10 || !wire.ValidJSON(in) || jsonQuirks(in) {
			return
		}
		var mine, owned ReadResourceResult
		var plain plainReadResult
		err = mine.decodeJSON(in)
		werr := json.Unmarshal(in, &plain)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: codec error %v, encoding/json error %v", in, err, werr)
		}
		if err != nil {
			return
		}
		if len(mine.Contents) != len(plain.Contents) || (mine.Contents == nil) != (plain.Contents == nil) || !reflect.DeepEqual(mine.Meta, plain.Meta) {
			t.Fatalf("%s: codec %+v, encoding/json %+v", in, mine, plain)
		}
		for i := range mine.Contents {
			if ResourceContents(plain.Contents[i]).URI != mine.Contents[i].URI || !reflect.DeepEqual(ResourceContents(plain.Contents[i]), mine.Contents[i]) {
				t.Fatalf("%s: contents %d: codec %+v, encoding/json %+v", in, i, mine.Contents[i], plain.Contents[i])
			}
		}
		// Owned decoding (a frame the envelope scan accepted) agrees too.
		if err := owned.decodeOwned(bytes.Clone(in)); err != nil || !reflect.DeepEqual(owned, mine) {
			t.Fatalf("%s: owned %+v (%v), copied %+v", in, owned, err, mine)
		}
	})
}

// jsonQuirks reports whether valid JSON b has an object key that
// encoding/json would match to a field only by its leniencies: written
// with escapes ("\u0075ri") or in another case ("URI"). MCP's keys are
// exact, and the codecs match them exactly. It also reports a list given
// twice ("contents" repeated): encoding/json decodes the second into the
// first one's elements, keeping members the second does not set; the
// codecs, like other parsers, read the second list alone.
func jsonQuirks(b []byte) bool {
	odd, lists := false, 0
	var walk func(i, depth int) (int, error)
	walk = func(i, depth int) (int, error) {
		switch b[i] {
		case '{':
			return wire.WalkMembers(b, i, depth+1, func(k []byte, j int) (int, error) {
				name := string(k[1 : len(k)-1])
				if strings.Contains(name, `\`) || (name != strings.ToLower(name) && slices.Contains([]string{"contents", "uri", "mimetype", "text", "blob", "_meta"}, strings.ToLower(name))) {
					odd = true
				}
				if name == "contents" && depth == 0 {
					if lists++; lists > 1 {
						odd = true
					}
				}
				return walk(j, depth+1)
			})
		case '[':
			return wire.WalkElements(b, i, depth+1, func(j int) (int, error) { return walk(j, depth+1) })
		}
		return wire.SkipValue(b, i, depth)
	}
	walk(wire.SkipWS(b, 0), 0)
	return odd
}

// BenchmarkReadResourceResult: a 64 KB text resource read and written by
// the codec and by encoding/json.
func BenchmarkReadResourceResult(b *testing.B) {
	r := ReadResourceResult{Contents: []ResourceContents{{URI: "file:///var/log/app.log", MimeType: "text/plain",
		Text: strings.Repeat("2026-11-25T08:00:00Z INFO request served in 12ms\n", (64<<10)/50)}}}
	raw, _ := r.MarshalJSON()
	b.SetBytes(int64(len(raw)))
	b.Run("codec-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r ReadResourceResult
			if err := r.decodeJSON(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r plainReadResult
			if err := json.Unmarshal(raw, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("codec-encode", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, len(raw)+64)
		for b.Loop() {
			buf, _ = r.appendJSON(buf[:0])
		}
	})
	b.Run("encoding-json-encode", func(b *testing.B) {
		b.ReportAllocs()
		p := plainReadResult{Contents: []plainResourceContents{plainResourceContents(r.Contents[0])}}
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A key given twice is read as encoding/json reads it: a later list or
// null replaces the earlier value, a later object adds to the earlier one
// (an embedded resource, _meta). A filter and the agent must not read one
// message two ways.
func TestCodecRepeatedKeys(t *testing.T) {
	for _, in := range []string{
		`{"content":[{"type":"text","text":"a"}],"content":null}`,
		`{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"a"},"resource":{"text":"t"}}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"a"},"resource":null}]}`,
		`{"content":[],"_meta":{"a":1},"_meta":{"b":2}}`,
		`{"content":[{"type":"text","text":"a","_meta":{"a":1},"_meta":null}]}`,
	} {
		var got CallToolResult
		var want plainCallResult
		if err := got.decodeJSON([]byte(in)); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", in, err)
		}
		var plain []Content
		if want.Content != nil {
			plain = make([]Content, len(want.Content))
		}
		for i, c := range want.Content {
			plain[i] = Content(c)
		}
		if !reflect.DeepEqual(got.Content, plain) || !reflect.DeepEqual(got.Meta, want.Meta) {
			t.Errorf("%s:\ncodec         %+v %v\nencoding/json %+v %v", in, got.Content, got.Meta, plain, want.Meta)
		}
	}
}
