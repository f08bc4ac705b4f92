package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// HTTP request metadata of the stateless revision (SEP-2243): a modern
// POST mirrors its method, the name or URI it acts on, and the tool
// parameters the tool's inputSchema marks with x-mcp-header into headers,
// so intermediaries can route without parsing the body. The protocol
// library knows no HTTP: it finds the annotations, checks them, takes the
// values out of the arguments and encodes them; a transport that has
// headers writes them (ParamHeadersOf).

// HeaderAnnotation is one x-mcp-header annotation of a tool's inputSchema:
// the header Mcp-Param-{Name} carries the argument at Path (a chain of
// property names from the arguments object).
type HeaderAnnotation struct {
	Name string
	Path []string
}

// ParamHeader is one Mcp-Param-{Name} header of a request, its value
// already encoded (EncodeHeaderValue).
type ParamHeader struct {
	Name  string
	Value string
}

type paramHeadersKey struct{}

// WithParamHeaders returns ctx carrying the Mcp-Param headers of the
// request sent under it, for a transport that writes headers.
func WithParamHeaders(ctx context.Context, h []ParamHeader) context.Context {
	return context.WithValue(ctx, paramHeadersKey{}, h)
}

// ParamHeadersOf is the Mcp-Param headers a request sent under ctx carries.
func ParamHeadersOf(ctx context.Context) []ParamHeader {
	h, _ := ctx.Value(paramHeadersKey{}).([]ParamHeader)
	return h
}

// Sentinel markers of a Base64-encoded header value.
const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// EncodeHeaderValue is s as an Mcp-Name or Mcp-Param header value: as it
// is when it is header-safe visible ASCII without surrounding white space,
// else (non-ASCII, control characters, leading or trailing white space, or
// a value that looks like the sentinel itself) =?base64?{UTF-8 in
// Base64}?=. Both roles use it, so what a client sends is what a server
// compares.
func EncodeHeaderValue(s string) string {
	plain := s == strings.TrimSpace(s) && !(strings.HasPrefix(s, b64Prefix) && strings.HasSuffix(s, b64Suffix))
	for i := 0; plain && i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			plain = false
		}
	}
	if plain {
		return s
	}
	return b64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + b64Suffix
}

// DecodeHeaderValue undoes EncodeHeaderValue: the =?base64?...?= form to
// the UTF-8 text it carries, a plain value as it is once checked for the
// characters a header may carry. The error says what is wrong with v.
func DecodeHeaderValue(v string) (string, error) {
	if len(v) >= len(b64Prefix)+len(b64Suffix) && strings.HasPrefix(v, b64Prefix) && strings.HasSuffix(v, b64Suffix) {
		b, err := base64.StdEncoding.DecodeString(v[len(b64Prefix) : len(v)-len(b64Suffix)])
		if err != nil {
			return "", fmt.Errorf("the =?base64?...?= value is not valid base64: %v", err)
		}
		if !utf8.Valid(b) {
			return "", errors.New("the =?base64?...?= value does not decode to UTF-8 text")
		}
		return string(b), nil
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", fmt.Errorf("byte %d (0x%02x) may not appear in a plain header value; send the value as =?base64?...?=", i, c)
		}
	}
	return v, nil
}

// maxSchemaDepth bounds the walk over an inputSchema.
const maxSchemaDepth = 64

// HeaderAnnotations finds and checks the x-mcp-header annotations of an
// inputSchema. An error says why the tool definition is invalid (a client
// excludes such a tool from tools/list): an empty name or one that is not
// an HTTP token, two names equal but for case, an annotation on a
// parameter that is not a string, integer or boolean, or one that is not
// reached from the root through properties alone.
func HeaderAnnotations(schema json.RawMessage) ([]HeaderAnnotation, error) {
	if !bytes.Contains(schema, []byte("x-mcp-header")) {
		return nil, nil // the common case: nothing to decode
	}
	var root any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("inputSchema is not JSON: %w", err)
	}
	var out []HeaderAnnotation
	seen := map[string]string{}
	var walk func(node any, path []string, static bool, depth int) error
	walk = func(node any, path []string, static bool, depth int) error {
		if depth > maxSchemaDepth {
			return fmt.Errorf("inputSchema nests deeper than %d levels", maxSchemaDepth)
		}
		switch n := node.(type) {
		case []any:
			for _, v := range n {
				if err := walk(v, path, false, depth+1); err != nil {
					return err
				}
			}
		case map[string]any:
			if raw, ok := n["x-mcp-header"]; ok {
				where := "/" + strings.Join(path, "/")
				if !static || len(path) == 0 {
					return fmt.Errorf("x-mcp-header at %s is not on a property reached from the root through properties alone", where)
				}
				name, ok := raw.(string)
				if !ok {
					return fmt.Errorf("x-mcp-header at %s is not a string", where)
				}
				if err := checkHeaderName(name); err != nil {
					return fmt.Errorf("x-mcp-header %q at %s: %w", name, where, err)
				}
				if prev, dup := seen[strings.ToLower(name)]; dup {
					return fmt.Errorf("x-mcp-header %q at %s repeats the one at %s (names are compared without case)", name, where, prev)
				}
				seen[strings.ToLower(name)] = where
				if t, _ := n["type"].(string); t != "string" && t != "integer" && t != "boolean" {
					return fmt.Errorf("x-mcp-header %q at %s is on a parameter of type %v; only string, integer and boolean parameters may be mirrored", name, where, n["type"])
				}
				out = append(out, HeaderAnnotation{Name: name, Path: slices.Clone(path)})
			}
			for k, v := range n {
				switch k {
				case "x-mcp-header", "const", "default", "enum", "examples":
					// Instance values, not schemas.
					continue
				case "properties":
					props, ok := v.(map[string]any)
					if !ok {
						continue
					}
					for name, sub := range props {
						if err := walk(sub, append(path, name), static, depth+1); err != nil {
							return err
						}
					}
					continue
				}
				if err := walk(v, path, false, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, nil, true, 0); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b HeaderAnnotation) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// checkHeaderName says why name cannot follow "Mcp-Param-": it must be an
// RFC 9110 token (1*tchar).
func checkHeaderName(name string) error {
	if name == "" {
		return fmt.Errorf("the name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTchar(name[i]) {
			return fmt.Errorf("byte %d (%q) is not allowed in an HTTP field name", i, name[i])
		}
	}
	return nil
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ParamHeaders are the Mcp-Param headers of a call with args (a JSON
// object) to a tool annotated with anns: one per annotated argument that
// is present and not null, its value encoded.
func ParamHeaders(anns []HeaderAnnotation, args json.RawMessage) []ParamHeader {
	if len(anns) == 0 || len(args) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	var obj map[string]any
	if d.Decode(&obj) != nil {
		return nil
	}
	var out []ParamHeader
	for _, a := range anns {
		var v any = obj
		for _, p := range a.Path {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[p]
		}
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case json.Number:
			s = x.String()
		case bool:
			s = "false"
			if x {
				s = "true"
			}
		default: // absent, null, or not a primitive: no header
			continue
		}
		out = append(out, ParamHeader{Name: a.Name, Value: EncodeHeaderValue(s)})
	}
	return out
}
