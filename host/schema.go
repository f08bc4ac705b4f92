package host

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemas compiles tool schemas once and keeps them by content, so a tool
// list refresh that does not change a schema costs nothing.
type schemas struct {
	mu    sync.Mutex
	cache map[[32]byte]*compiled
}

type compiled struct {
	schema *jsonschema.Schema
	err    error // the schema did not compile: the tool works unvalidated
}

// maxSchemaSize bounds what is compiled; a larger schema is not used for
// validation (with a warning), it does not fail the tool.
const maxSchemaSize = 1 << 20

// noLoader refuses every $ref outside the schema: a server's schema must
// not make the host read files or reach the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not followed", url)
}

func (s *schemas) get(raw json.RawMessage) *compiled {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	key := sha256.Sum256(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = map[[32]byte]*compiled{}
	}
	if c, ok := s.cache[key]; ok {
		return c
	}
	c := compileSchema(raw)
	s.cache[key] = c
	return c
}

func compileSchema(raw json.RawMessage) *compiled {
	if len(raw) > maxSchemaSize {
		return &compiled{err: fmt.Errorf("schema is %d bytes, over the %d byte limit", len(raw), maxSchemaSize)}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return &compiled{err: fmt.Errorf("schema is not JSON: %w", err)}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft2020)
	const loc = "mem:///schema.json"
	if err := c.AddResource(loc, doc); err != nil {
		return &compiled{err: err}
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return &compiled{err: err}
	}
	return &compiled{schema: sch}
}

// SchemaError is arguments or structured output that fail a tool's schema.
type SchemaError struct {
	Server, Tool string
	What         string   // "arguments" or "structured output"
	Problems     []string // "/field: rule", one per failed rule
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s.%s: %s do not match the tool's schema: %s", e.Server, e.Tool, e.What, strings.Join(e.Problems, "; "))
}

// validate checks raw (a JSON document) against c.
func (c *compiled) validate(raw json.RawMessage) ([]string, error) {
	if c == nil || c.schema == nil {
		return nil, nil
	}
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	err = c.schema.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []string
	leaves(ve, &out)
	sort.Strings(out)
	return out, nil
}

var english = message.NewPrinter(language.English)

// leaves collects the innermost causes: they name the field and the rule.
func leaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) == 0 {
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		*out = append(*out, loc+": "+ve.ErrorKind.LocalizedString(english))
		return
	}
	for _, c := range ve.Causes {
		leaves(c, out)
	}
}
