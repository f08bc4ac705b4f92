package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nexus-mcp/nexus/internal/schemaerr"
)

// maxSchemaSize bounds a config schema a plugin may hand the host.
const maxSchemaSize = 1 << 20

// schema is a compiled config schema of one plugin kind.
type schema struct {
	raw json.RawMessage
	s   *jsonschema.Schema
}

// noLoader refuses every $ref outside the schema itself: a plugin's schema
// must not make the host read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("config schemas may not refer to %s: only references inside the schema are allowed", url)
}

func compileSchema(plugin, kind string, raw []byte) (*schema, error) {
	if len(raw) > maxSchemaSize {
		return nil, fmt.Errorf("the %s config schema is %d bytes, over the %d-byte limit", kind, len(raw), maxSchemaSize)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the %s config schema is not valid JSON: %v", kind, err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	url := "nexus-plugin:///" + plugin + "/" + kind + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("the %s config schema is invalid: %v", kind, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("the %s config schema is invalid: %v", kind, err)
	}
	return &schema{raw: raw, s: s}, nil
}

// validate checks config (JSON) against the schema and returns one line per
// problem, "JSON pointer: message", sorted.
func (s *schema) validate(config []byte) ([]string, error) {
	if s == nil {
		return nil, nil
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(config))
	if err != nil {
		return nil, err
	}
	err = s.s.Validate(v)
	if err == nil {
		return nil, nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return []string{err.Error()}, nil
	}
	return schemaerr.Lines(ve), nil
}
