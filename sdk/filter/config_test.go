package filter

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

// The config types of the first-party filters, and the other shapes a
// config may take.
type testConfig struct {
	Tools    []string          `json:"tools"`
	Hide     bool              `json:"hide"`
	Preamble *string           `json:"preamble"`
	Limit    int               `json:"limit"`
	Small    int8              `json:"small"`
	Count    uint16            `json:"count"`
	Ratio    float64           `json:"ratio"`
	Labels   map[string]string `json:"labels"`
	Pair     [2]int            `json:"pair"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw"`
	Nested   *testConfig       `json:"nested"`
	Rules    []struct {
		Match string `json:"match,omitempty"`
		Deny  bool
	} `json:"rules"`
	Skipped string `json:"-"`
	NoTag   string
	//lint:ignore U1000 an unexported field the decoder must skip, as encoding/json does
	private int
}

var configSeeds = []string{
	`{}`, "{}\f", "{}\v", `null`, ` {"tools": ["a.*", "b.c"], "hide": true} `, `{"preamble": "x\u00e9\n"}`, `{"preamble": null}`,
	`{"limit": -12, "small": 127, "count": 65535, "ratio": 1.5e-3}`, `{"small": 128}`, `{"count": -1}`, `{"limit": 1.5}`, `{"limit": 1e2}`,
	`{"labels": {"a": "b", "c": "d"}}`, `{"labels": null}`, `{"pair": [1, 2, 3]}`, `{"pair": [1]}`,
	`{"any": {"a": [1, "x", true, null, {"b": -0.5}]}}`, `{"any": null}`, `{"raw": {"x": [1, 2]}}`, `{"raw": null}`,
	`{"nested": {"tools": ["x"], "nested": {"hide": true}}}`, `{"rules": [{"match": "a", "Deny": true}, {"deny": false}]}`,
	`{"Tools": ["upper"]}`, `{"TOOLS": ["x"], "tools": ["y"]}`, `{"notag": "n", "NoTag": "m"}`, `{"skipped": "x"}`, `{"private": 1}`, `{"-": 1}`,
	`{"wrod": "no"}`, `{"tools": "a"}`, `{"hide": 1}`, `{"tools": [1]}`, `{"labels": []}`, `{"tools": ["a",]}`, `{"tools" ["a"]}`,
	`{"limit": 01}`, `{"limit": -}`, `{"preamble": "\x"}`, `{"hide": true} x`, `[]`, `"s"`, `{"limit": 99999999999999999999}`,
	`{"tools": ["a"], "tools": ["b"]}`, `{"nested": {"limit": 1}, "nested": {"hide": true}}`, "{\"preamble\": \"\xff\"}",
}

func TestDecodeConfig(t *testing.T) {
	for _, s := range configSeeds {
		checkDecodeConfig(t, []byte(s))
	}
	var c testConfig
	err := decodeConfig([]byte(`{"wrod": "no"}`), &c)
	if err == nil || !strings.Contains(err.Error(), `unknown field "wrod"`) {
		t.Errorf("unknown field: %v", err)
	}
	type embedded struct{ testConfig }
	if err := decodeConfig([]byte(`{"testConfig": {}}`), new(embedded)); err == nil || !strings.Contains(err.Error(), "embedded") {
		t.Errorf("embedded struct: %v", err)
	}
}

// FuzzDecodeConfig holds decodeConfig to encoding/json with
// DisallowUnknownFields: the same documents succeed, with the same values.
func FuzzDecodeConfig(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkDecodeConfig)
}

func checkDecodeConfig(t *testing.T, doc []byte) {
	var want, got testConfig
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	jerr := dec.Decode(&want)
	// What is left must be JSON whitespace only; bytes.TrimSpace would
	// also take \f and \v, which JSON does not allow.
	if jerr == nil && len(bytes.Trim(doc[dec.InputOffset():], " \t\r\n")) > 0 {
		jerr = errTrailing
	}
	err := decodeConfig(doc, &got)
	if (err == nil) != (jerr == nil) {
		t.Fatalf("%q: decodeConfig %v, encoding/json %v", doc, err, jerr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %+v\nwant %+v", doc, got, want)
	}
}

var errTrailing = json.Unmarshal([]byte(`1 2`), new(any))

// A WASM build decodes the events its fast decoder gives up on with
// decodeReflect, unknown keys skipped: the same as encoding/json.
func TestDecodeReflectEvent(t *testing.T) {
	for _, s := range []string{
		`{"abi":1,"phase":"request","method":"tools/call","agent":{"id":"a","permission":"yolo"},"server":{"name":"s","info":{"name":"n","version":"1"}},"tool":{"name":"t","annotations":{"title":"T","destructiveHint":true,"readOnlyHint":null}},"params":{"a":[1]},"result":null}`,
		`{"abi":1,"phase":"response","newField":{"x":[1,{"y":"\n"}]},"tool":{"name":"t","icons":[]},"Method":"tools/call","result":{"content":[]}}`,
		`{"agent":{"id":"a","extra":1},"server":null,"tool":null}`,
	} {
		var got, want event.Event
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if err := decodeReflect([]byte(s), &got, true); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", s, got, want)
		}
	}
}
