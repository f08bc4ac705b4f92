package schemaerr

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func TestLines(t *testing.T) {
	const schema = `{"type":"object","$defs":{"limit":{"type":"object","required":["rate"],
		"properties":{"rate":{"type":"string","pattern":"^[0-9]+/m$"}}}},
		"properties":{"a":{"$ref":"#/$defs/limit"},"b":{"$ref":"#/$defs/limit"}}}`
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(schema)))
	c := jsonschema.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(`{"b":{},"a":{"rate":"lots"}}`)))
	var ve *jsonschema.ValidationError
	if !errors.As(s.Validate(v), &ve) {
		t.Fatal("valid")
	}
	want := []string{
		"/a/rate: 'lots' does not match pattern '^[0-9]+/m$'",
		"/b: missing property 'rate'",
	}
	if got := Lines(ve); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
