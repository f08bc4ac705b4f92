package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Elicitation at the terminal. Form mode asks field by field following the
// requested schema (the 2025-11-25 primitive types: string with format and
// length, number and integer with bounds, boolean, single-select enums in
// all three forms and multi-select arrays); defaults are offered and
// required fields insisted on. URL mode shows the URL and its host, and
// waits for the person to say they are done; Nexus never opens it. Without
// a terminal every request is declined.

// elicitationHandler answers one server's elicitation requests.
func (a *app) elicitationHandler(server string) mcp.ElicitationHandler {
	return func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		con := a.console()
		if !con.canAsk() {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		if p.Mode == "url" {
			return con.elicitURL(ctx, server, p)
		}
		return con.elicitForm(ctx, server, p)
	}
}

// Commands accepted at any prompt of a form.
const (
	cmdDecline = "/decline"
	cmdCancel  = "/cancel"
)

var errDeclined = errors.New("declined")

func (c *console) elicitForm(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	fields, required, err := parseForm(p.RequestedSchema)
	if err != nil {
		// A form we cannot show cannot be filled honestly: refuse it so the
		// server learns why.
		return nil, mcp.InvalidParams("elicitation/create: %v", err)
	}
	c.begin()
	defer c.end()
	c.say("\nServer %q asks for input:\n%s", server, indent(clean(p.Message), "  "))
	if len(fields) == 0 {
		ans, err := c.read(ctx, "Answer? [y]es, [n]o (decline), [c]ancel: ")
		if err != nil {
			return c.elicitStopped(err)
		}
		switch strings.ToLower(strings.TrimSpace(ans)) {
		case "y", "yes":
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		case "c", "cancel":
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	c.say("Fields marked * are required; Enter takes the [default]. Type %s or %s at any prompt to stop.\n", cmdDecline, cmdCancel)
	content := map[string]any{}
	for _, f := range fields {
		v, set, err := c.askField(ctx, f, required[f.name])
		if err != nil {
			return c.elicitStopped(err)
		}
		if set {
			content[f.name] = v
		}
	}
	c.say("Sent to server %q.\n", server)
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

// elicitStopped turns why a form stopped into the answer.
func (c *console) elicitStopped(err error) (*mcp.ElicitResult, error) {
	switch {
	case errors.Is(err, errDeclined):
		c.say("Declined.\n")
		return &mcp.ElicitResult{Action: "decline"}, nil
	case errors.Is(err, io.EOF), errors.Is(err, errAborted):
		c.say("Cancelled.\n")
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return nil, err
}

func (c *console) elicitURL(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	u, err := url.Parse(p.URL)
	if err != nil || u.Host == "" {
		return nil, mcp.InvalidParams("elicitation/create: url %q is not an absolute URL", p.URL)
	}
	c.begin()
	defer c.end()
	c.say("\nServer %q asks you to open a web page:\n%s", server, indent(clean(p.Message), "  "))
	c.say("  URL:  %s\n", clean(p.URL))
	c.say("  Host: %s\n", clean(u.Hostname()))
	if u.Scheme != "https" {
		c.say("  Note: this URL is not https; what you type there can be read on the way.\n")
	}
	c.say("Nexus does not open it for you. Check the host, open the URL in your browser, and come back.\n")
	ans, err := c.read(ctx, "Press Enter when you are done, or type n to decline: ")
	if err != nil {
		return c.elicitStopped(err)
	}
	switch strings.ToLower(strings.TrimSpace(ans)) {
	case "n", "no", cmdDecline:
		c.say("Declined.\n")
		return &mcp.ElicitResult{Action: "decline"}, nil
	case "c", cmdCancel:
		c.say("Cancelled.\n")
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	return &mcp.ElicitResult{Action: "accept"}, nil
}

// field is one property of a requested schema.
type field struct {
	name        string
	typ         string // string, number, integer, boolean, array
	title, desc string
	format      string
	minLen      *int
	maxLen      *int
	minimum     *float64
	maximum     *float64
	options     []option // single select (string) or multi select (array)
	minItems    *int
	maxItems    *int
	def         json.RawMessage
}

type option struct{ value, title string }

type propSchema struct {
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Format      string          `json:"format"`
	MinLength   *int            `json:"minLength"`
	MaxLength   *int            `json:"maxLength"`
	Minimum     *float64        `json:"minimum"`
	Maximum     *float64        `json:"maximum"`
	Enum        []string        `json:"enum"`
	EnumNames   []string        `json:"enumNames"`
	OneOf       []constTitle    `json:"oneOf"`
	AnyOf       []constTitle    `json:"anyOf"`
	Items       *propSchema     `json:"items"`
	MinItems    *int            `json:"minItems"`
	MaxItems    *int            `json:"maxItems"`
	Default     json.RawMessage `json:"default"`
}

type constTitle struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// parseForm reads a requested schema; properties keep the order the server
// wrote them in, which is the order a person is asked.
func parseForm(raw json.RawMessage) ([]field, map[string]bool, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("requestedSchema: %v", err)
	}
	if s.Type != "" && s.Type != "object" {
		return nil, nil, fmt.Errorf("requestedSchema has type %q; it must be an object", s.Type)
	}
	order, err := propertyOrder(raw)
	if err != nil {
		return nil, nil, err
	}
	required := map[string]bool{}
	for _, r := range s.Required {
		if _, ok := s.Properties[r]; !ok {
			return nil, nil, fmt.Errorf("requestedSchema requires %q, which is not among its properties", r)
		}
		required[r] = true
	}
	var fields []field
	for _, name := range order {
		var ps propSchema
		if err := json.Unmarshal(s.Properties[name], &ps); err != nil {
			return nil, nil, fmt.Errorf("property %q: %v", name, err)
		}
		f := field{name: name, typ: ps.Type, title: ps.Title, desc: ps.Description, format: ps.Format,
			minLen: ps.MinLength, maxLen: ps.MaxLength, minimum: ps.Minimum, maximum: ps.Maximum,
			minItems: ps.MinItems, maxItems: ps.MaxItems, def: ps.Default}
		switch ps.Type {
		case "string":
			switch {
			case len(ps.OneOf) > 0:
				for _, o := range ps.OneOf {
					f.options = append(f.options, option{o.Const, o.Title})
				}
			case len(ps.Enum) > 0:
				for i, v := range ps.Enum {
					o := option{value: v}
					if i < len(ps.EnumNames) {
						o.title = ps.EnumNames[i]
					}
					f.options = append(f.options, o)
				}
			}
		case "number", "integer", "boolean":
		case "array":
			if ps.Items == nil {
				return nil, nil, fmt.Errorf("property %q is an array without items", name)
			}
			switch {
			case len(ps.Items.AnyOf) > 0:
				for _, o := range ps.Items.AnyOf {
					f.options = append(f.options, option{o.Const, o.Title})
				}
			case len(ps.Items.Enum) > 0:
				for _, v := range ps.Items.Enum {
					f.options = append(f.options, option{value: v})
				}
			default:
				return nil, nil, fmt.Errorf("property %q is an array without enum or anyOf items (only multi-select is allowed)", name)
			}
		default:
			return nil, nil, fmt.Errorf("property %q has type %q; a form takes string, number, integer, boolean or a multi-select array", name, ps.Type)
		}
		fields = append(fields, f)
	}
	return fields, required, nil
}

// propertyOrder lists the keys of raw's "properties" object in order.
func propertyOrder(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("requestedSchema is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		if key != "properties" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, errors.New("requestedSchema.properties is not an object")
		}
		var keys []string
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, err
			}
			keys = append(keys, t.(string))
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
		return keys, nil
	}
	return nil, nil
}

// label is how a field is named on screen.
func (f field) label() string {
	l := f.title
	if l == "" {
		l = f.name
	}
	return clean(l)
}

// askField asks until the answer fits the field. set is false for an
// optional field left empty without a default.
func (c *console) askField(ctx context.Context, f field, required bool) (v any, set bool, err error) {
	star := ""
	if required {
		star = "*"
	}
	head := "  " + f.label() + star
	if f.desc != "" {
		head += " — " + firstLine(clean(f.desc))
	}
	if hint := f.hint(); hint != "" {
		head += " (" + hint + ")"
	}
	c.say("%s\n", head)
	for i, o := range f.options {
		t := clean(o.value)
		if o.title != "" {
			t = clean(o.title) + " [" + clean(o.value) + "]"
		}
		c.say("    %d) %s\n", i+1, t)
	}
	prompt := "  > "
	if d := f.defaultText(); d != "" {
		prompt = "  [" + d + "] > "
	}
	for {
		line, err := c.read(ctx, prompt)
		if err != nil {
			return nil, false, err
		}
		in := strings.TrimSpace(line)
		switch strings.ToLower(in) {
		case cmdDecline:
			return nil, false, errDeclined
		case cmdCancel:
			return nil, false, io.EOF
		}
		if in == "" {
			if len(f.def) > 0 && string(f.def) != "null" {
				var d any
				if json.Unmarshal(f.def, &d) == nil {
					if msg := f.check(d); msg == "" {
						return d, true, nil
					}
				}
			}
			if required {
				c.say("  %s is required.\n", f.label())
				continue
			}
			return nil, false, nil
		}
		v, msg := f.parse(in)
		if msg == "" {
			msg = f.check(v)
		}
		if msg != "" {
			c.say("  %s\n", msg)
			continue
		}
		return v, true, nil
	}
}

// hint says what kind of answer is expected.
func (f field) hint() string {
	var parts []string
	switch f.typ {
	case "string":
		if len(f.options) > 0 {
			parts = append(parts, "choose one: number or value")
			break
		}
		if f.format != "" {
			parts = append(parts, f.format)
		}
		switch {
		case f.minLen != nil && f.maxLen != nil:
			parts = append(parts, fmt.Sprintf("%d-%d characters", *f.minLen, *f.maxLen))
		case f.minLen != nil:
			parts = append(parts, fmt.Sprintf("at least %d characters", *f.minLen))
		case f.maxLen != nil:
			parts = append(parts, fmt.Sprintf("at most %d characters", *f.maxLen))
		}
	case "number", "integer":
		p := "a number"
		if f.typ == "integer" {
			p = "a whole number"
		}
		switch {
		case f.minimum != nil && f.maximum != nil:
			p += fmt.Sprintf(" from %g to %g", *f.minimum, *f.maximum)
		case f.minimum != nil:
			p += fmt.Sprintf(" ≥ %g", *f.minimum)
		case f.maximum != nil:
			p += fmt.Sprintf(" ≤ %g", *f.maximum)
		}
		parts = append(parts, p)
	case "boolean":
		parts = append(parts, "y/n")
	case "array":
		p := "choose any: numbers or values, comma-separated"
		switch {
		case f.minItems != nil && f.maxItems != nil:
			p = fmt.Sprintf("choose %d to %d: numbers or values, comma-separated", *f.minItems, *f.maxItems)
		case f.minItems != nil:
			p = fmt.Sprintf("choose at least %d: numbers or values, comma-separated", *f.minItems)
		case f.maxItems != nil:
			p = fmt.Sprintf("choose at most %d: numbers or values, comma-separated", *f.maxItems)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func (f field) defaultText() string {
	if len(f.def) == 0 || string(f.def) == "null" {
		return ""
	}
	var d any
	if json.Unmarshal(f.def, &d) != nil {
		return ""
	}
	switch v := d.(type) {
	case bool:
		if v {
			return "y"
		}
		return "n"
	case string:
		return clean(v)
	case []any:
		var s []string
		for _, x := range v {
			s = append(s, fmt.Sprint(x))
		}
		return clean(strings.Join(s, ", "))
	}
	return clean(fmt.Sprint(d))
}

// parse turns typed text into the field's JSON value.
func (f field) parse(in string) (any, string) {
	switch f.typ {
	case "boolean":
		switch strings.ToLower(in) {
		case "y", "yes", "true", "1", "on":
			return true, ""
		case "n", "no", "false", "0", "off":
			return false, ""
		}
		return nil, "Answer y or n."
	case "integer":
		n, err := strconv.ParseInt(in, 10, 64)
		if err != nil {
			return nil, "Enter a whole number."
		}
		return n, ""
	case "number":
		n, err := strconv.ParseFloat(in, 64)
		if err != nil {
			return nil, "Enter a number."
		}
		return n, ""
	case "array":
		var out []any
		for _, part := range strings.Split(in, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			v, ok := f.pick(part)
			if !ok {
				return nil, fmt.Sprintf("%q is not one of the choices.", part)
			}
			out = append(out, v)
		}
		return out, ""
	}
	if len(f.options) > 0 {
		v, ok := f.pick(in)
		if !ok {
			return nil, fmt.Sprintf("%q is not one of the choices; enter its number or value.", in)
		}
		return v, ""
	}
	return in, ""
}

// pick finds a choice by its number, value or title.
func (f field) pick(in string) (string, bool) {
	if n, err := strconv.Atoi(in); err == nil && n >= 1 && n <= len(f.options) {
		return f.options[n-1].value, true
	}
	for _, o := range f.options {
		if o.value == in {
			return o.value, true
		}
	}
	for _, o := range f.options {
		if strings.EqualFold(o.value, in) || (o.title != "" && strings.EqualFold(o.title, in)) {
			return o.value, true
		}
	}
	return "", false
}

// check applies the schema's constraints to a parsed value or a default.
func (f field) check(v any) string {
	switch f.typ {
	case "string":
		s, ok := v.(string)
		if !ok {
			return "Enter text."
		}
		if len(f.options) > 0 {
			if _, ok := f.pick(s); !ok {
				return fmt.Sprintf("%q is not one of the choices.", s)
			}
			return ""
		}
		n := len([]rune(s))
		if f.minLen != nil && n < *f.minLen {
			return fmt.Sprintf("Enter at least %d characters.", *f.minLen)
		}
		if f.maxLen != nil && n > *f.maxLen {
			return fmt.Sprintf("Enter at most %d characters.", *f.maxLen)
		}
		return checkFormat(f.format, s)
	case "integer", "number":
		var x float64
		switch n := v.(type) {
		case int64:
			x = float64(n)
		case float64:
			x = n
			if f.typ == "integer" && n != float64(int64(n)) {
				return "Enter a whole number."
			}
		default:
			return "Enter a number."
		}
		if f.minimum != nil && x < *f.minimum {
			return fmt.Sprintf("Enter a number of at least %g.", *f.minimum)
		}
		if f.maximum != nil && x > *f.maximum {
			return fmt.Sprintf("Enter a number of at most %g.", *f.maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "Answer y or n."
		}
	case "array":
		items, ok := v.([]any)
		if !ok {
			return "Choose from the list."
		}
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return "Choose from the list."
			}
			if _, ok := f.pick(s); !ok {
				return fmt.Sprintf("%q is not one of the choices.", s)
			}
		}
		if f.minItems != nil && len(items) < *f.minItems {
			return fmt.Sprintf("Choose at least %d.", *f.minItems)
		}
		if f.maxItems != nil && len(items) > *f.maxItems {
			return fmt.Sprintf("Choose at most %d.", *f.maxItems)
		}
	}
	return ""
}

func checkFormat(format, s string) string {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "Enter an email address (name@example.com)."
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return "Enter an absolute URI (https://example.com/...)."
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "Enter a date as YYYY-MM-DD."
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "Enter a date and time as RFC 3339 (2025-11-25T14:30:00Z)."
		}
	}
	return ""
}
