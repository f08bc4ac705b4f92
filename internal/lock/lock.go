package lock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/bounded"
)

// MaxFile bounds a lockfile Read accepts.
const MaxFile = 16 << 20

// FileName is the lockfile's name, beside the first config file.
const FileName = "nexus.lock.hcl"

// Lock is a lockfile: the servers it pins, by name.
type Lock struct {
	Servers []*Server // sorted by name
}

// Server is one server's pinned definitions.
type Server struct {
	Name      string
	Info      string // serverInfo "name version", for the reader
	Tools     []Item // sorted by name
	Prompts   []Item
	Templates []Item
}

// Item is one pinned tool, prompt or resource template: its name, the
// sha256 of the canonical JSON (RFC 8785) of its definition, its
// description, so that a change reads as one in review, and the rest of
// the definition. With the rest written out, the hash can be checked
// against what the file says: a description edited by hand (one a
// reviewer approves while the hash pins another) is caught when the file
// is read, and nexus lock --check can show what in a schema changed.
type Item struct {
	Name        string
	SHA256      string
	Description string
	// Rest is the canonical JSON of the definition without its
	// description: the title, schemas and annotations of a tool, the
	// arguments of a prompt, the URI template of a resource template.
	Rest string
	// Flags are the findings of the chain's tools/list policies (a
	// poisoning scan's) that a person accepted with nexus lock
	// --accept-flagged, written for review. Not part of the hash.
	Flags []string
}

// Server returns the pinned server called name, or nil.
func (l *Lock) Server(name string) *Server {
	for _, s := range l.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Tool returns the pinned tool called name, or nil.
func (s *Server) Tool(name string) *Item {
	i, ok := slices.BinarySearchFunc(s.Tools, name, func(it Item, name string) int { return strings.Compare(it.Name, name) })
	if !ok {
		return nil
	}
	return &s.Tools[i]
}

// Put replaces (or adds) a server's entry.
func (l *Lock) Put(s *Server) {
	l.Servers = slices.DeleteFunc(l.Servers, func(x *Server) bool { return x.Name == s.Name })
	l.Servers = append(l.Servers, s)
	slices.SortFunc(l.Servers, func(a, b *Server) int { return strings.Compare(a.Name, b.Name) })
}

// ToolItem pins a tool: what the model reads (title, description) and
// what it may send and get (inputSchema, outputSchema, annotations).
func ToolItem(t mcp.Tool) (Item, error) {
	var fs []field
	if t.Annotations != nil {
		b, err := json.Marshal(t.Annotations)
		if err != nil {
			return Item{}, err
		}
		fs = append(fs, field{"annotations", b})
	}
	if len(t.InputSchema) > 0 {
		fs = append(fs, field{"inputSchema", t.InputSchema})
	}
	if len(t.OutputSchema) > 0 {
		fs = append(fs, field{"outputSchema", t.OutputSchema})
	}
	if t.Title != "" {
		fs = append(fs, field{"title", quote(t.Title)})
	}
	return item(t.Name, t.Description, fs)
}

// PromptItem pins a prompt: its title, description and arguments.
func PromptItem(p mcp.Prompt) (Item, error) {
	args, err := json.Marshal(p.Arguments)
	if err != nil {
		return Item{}, err
	}
	return item(p.Name, p.Description, []field{{"arguments", args}, {"title", quote(p.Title)}})
}

// TemplateItem pins a resource template: its URI template, title,
// description and MIME type.
func TemplateItem(t mcp.ResourceTemplate) (Item, error) {
	return item(t.Name, t.Description, []field{{"mimeType", quote(t.MimeType)}, {"title", quote(t.Title)}, {"uriTemplate", quote(t.URITemplate)}})
}

// field is one member of a definition: its key and its JSON.
type field struct {
	key string
	raw []byte
}

// quote is s as a canonical JSON string. Like encoding/json, it writes
// each byte that is not UTF-8 as U+FFFD (a server's strings came through
// a JSON decoder, which did the same, so this is for Go callers).
func quote(s string) []byte {
	if !utf8.ValidString(s) {
		b := make([]byte, 0, len(s)+8)
		for i := 0; i < len(s); {
			r, n := utf8.DecodeRuneInString(s[i:])
			b = utf8.AppendRune(b, r)
			i += n
		}
		s = string(b)
	}
	return appendString(nil, s)
}

// item pins a definition made of fields (their keys plain ASCII, in
// order, none "description") and desc, its description when not empty:
// the sha256 of the canonical JSON of it all, and the canonical rest.
func item(name, desc string, fields []field) (Item, error) {
	full := make([]byte, 1, 512)
	full[0] = '{'
	rest := make([]byte, 1, 512)
	rest[0] = '{'
	described := desc == ""
	var value []byte
	for _, f := range fields {
		if !described && f.key > "description" {
			full = appendMember(full, "description", quote(desc))
			described = true
		}
		var err error
		if value, err = canonical(value[:0], f.raw); err != nil {
			return Item{}, fmt.Errorf("%s: %s: %w", name, f.key, err)
		}
		full = appendMember(full, f.key, value)
		rest = appendMember(rest, f.key, value)
	}
	if !described {
		full = appendMember(full, "description", quote(desc))
	}
	full = append(full, '}')
	rest = append(rest, '}')
	sum := sha256.Sum256(full)
	return Item{Name: name, SHA256: hex.EncodeToString(sum[:]), Description: desc, Rest: string(rest)}, nil
}

// appendMember appends `,"key":value` (no comma after the opening brace).
func appendMember(b []byte, key string, value []byte) []byte {
	if b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = appendString(b, key)
	b = append(b, ':')
	return append(b, value...)
}

// hash is the hex sha256 of the canonical JSON of def.
func hash(def []byte) (string, error) {
	canon, err := canonical(nil, def)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:]), nil
}

// verify checks that it.SHA256 is the hash of its description and rest,
// as written: what a hand edit of either breaks.
func (it Item) verify() error {
	var def map[string]json.RawMessage
	if err := json.Unmarshal([]byte(it.Rest), &def); err != nil || def == nil {
		return errors.New("rest is not a JSON object")
	}
	if it.Description != "" {
		b, _ := json.Marshal(it.Description)
		def["description"] = b
	}
	raw, err := json.Marshal(def)
	if err != nil {
		return err
	}
	sum, err := hash(raw)
	if err != nil {
		return err
	}
	if sum != it.SHA256 {
		return errors.New("sha256 does not match")
	}
	return nil
}

func sortItems(items []Item) {
	slices.SortFunc(items, func(a, b Item) int { return strings.Compare(a.Name, b.Name) })
}

// Write renders the lockfile: HCL, servers and items in name order, so a
// change shows as a small diff.
func (l *Lock) Write() []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	for i, s := range l.Servers {
		if i > 0 {
			body.AppendNewline()
		}
		sb := body.AppendNewBlock("server", []string{s.Name}).Body()
		if s.Info != "" {
			sb.SetAttributeValue("info", cty.StringVal(s.Info))
		}
		for _, kind := range []struct {
			block string
			items []Item
		}{{"tool", s.Tools}, {"prompt", s.Prompts}, {"template", s.Templates}} {
			for _, it := range kind.items {
				sb.AppendNewline()
				ib := sb.AppendNewBlock(kind.block, []string{it.Name}).Body()
				ib.SetAttributeValue("sha256", cty.StringVal(it.SHA256))
				ib.SetAttributeValue("description", cty.StringVal(it.Description))
				ib.SetAttributeValue("rest", restValue(it.Rest))
				if len(it.Flags) > 0 {
					fs := make([]cty.Value, len(it.Flags))
					for i, f := range it.Flags {
						fs[i] = cty.StringVal(f)
					}
					ib.SetAttributeValue("flags", cty.ListVal(fs))
				}
			}
		}
	}
	var b bytes.Buffer
	b.WriteString("# nexus.lock.hcl: the definitions of every server's tools, prompts and resource\n")
	b.WriteString("# templates as `nexus lock` saw them. Review a change to it as you would code;\n")
	b.WriteString("# `nexus lock --check` compares the servers with it. Each sha256 is that of the\n")
	b.WriteString("# definition made of the description and the rest beside it.\n\n")
	b.Write(f.Bytes())
	return b.Bytes()
}

// restValue is the canonical JSON of an item's rest as an HCL value, so
// that a schema reads (and diffs) in review as the rest of the file does.
func restValue(rest string) cty.Value {
	ty, err := ctyjson.ImpliedType([]byte(rest))
	if err != nil {
		return cty.StringVal(rest) // never for what item wrote; Parse refuses it
	}
	v, err := ctyjson.Unmarshal([]byte(rest), ty)
	if err != nil {
		return cty.StringVal(rest)
	}
	return v
}

// restJSON turns a rest read from the file back into canonical JSON.
func restJSON(v cty.Value) (string, error) {
	if !v.IsWhollyKnown() || v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return "", errors.New("rest must be an object")
	}
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return "", err
	}
	canon, err := canonical(nil, b)
	if err != nil {
		return "", err
	}
	return string(canon), nil
}

var (
	lockSchema   = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "server", LabelNames: []string{"name"}}}}
	serverSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "info"}},
		Blocks: []hcl.BlockHeaderSchema{{Type: "tool", LabelNames: []string{"name"}}, {Type: "prompt", LabelNames: []string{"name"}},
			{Type: "template", LabelNames: []string{"name"}}},
	}
	itemSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "sha256", Required: true}, {Name: "description"}, {Name: "rest", Required: true}, {Name: "flags"}}}
	hexSHA256  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// Read reads a lockfile; none at path is (nil, nil). A file that cannot be
// used is an error that says where (file:line:column) and what is wrong:
// a host must not run unpinned because its lockfile is broken.
func Read(path string) (*Lock, error) {
	// Read no more than the limit allows: the file is outside input.
	data, err := bounded.ReadFile(path, MaxFile)
	var tl *bounded.TooLargeError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.As(err, &tl):
		return nil, fmt.Errorf("lockfile %s is over %d bytes; it is written by nexus lock: restore it from version control, or write it anew with nexus lock", path, MaxFile)
	case err != nil:
		return nil, err
	}
	return Parse(data, path)
}

// Parse reads a lockfile's text.
func Parse(data []byte, filename string) (*Lock, error) {
	f, diags := hclsyntax.ParseConfig(data, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, lockErr(diags)
	}
	c, diags := f.Body.Content(lockSchema)
	if diags.HasErrors() {
		return nil, lockErr(diags)
	}
	l := &Lock{}
	var errs hcl.Diagnostics
	str := func(a *hcl.Attribute) string {
		v, d := a.Expr.Value(nil)
		if d.HasErrors() || v.Type() != cty.String || v.IsNull() {
			errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a string", Detail: fmt.Sprintf("%s must be a quoted string.", a.Name), Subject: a.Expr.Range().Ptr()})
			return ""
		}
		return v.AsString()
	}
	seen := map[string]bool{}
	for _, b := range c.Blocks {
		name := b.Labels[0]
		if seen[name] {
			errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Server pinned twice", Detail: fmt.Sprintf("server %q has two blocks; keep one (nexus lock --server %s writes it anew).", name, name), Subject: b.DefRange.Ptr()})
			continue
		}
		seen[name] = true
		sc, d := b.Body.Content(serverSchema)
		if d.HasErrors() {
			errs = append(errs, d...)
			continue
		}
		s := &Server{Name: name}
		if a := sc.Attributes["info"]; a != nil {
			s.Info = str(a)
		}
		names := map[string]bool{}
		for _, ib := range sc.Blocks {
			key := ib.Type + " " + ib.Labels[0]
			if names[key] {
				errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Pinned twice", Detail: fmt.Sprintf("%s %q of server %q appears twice.", ib.Type, ib.Labels[0], name), Subject: ib.DefRange.Ptr()})
				continue
			}
			names[key] = true
			ic, d := ib.Body.Content(itemSchema)
			if d.HasErrors() {
				errs = append(errs, d...)
				continue
			}
			it := Item{Name: ib.Labels[0], SHA256: str(ic.Attributes["sha256"])}
			if a := ic.Attributes["description"]; a != nil {
				it.Description = str(a)
			}
			if a := ic.Attributes["rest"]; a != nil {
				v, d := a.Expr.Value(nil)
				var err error
				if d.HasErrors() {
					errs = append(errs, d...)
				} else if it.Rest, err = restJSON(v); err != nil {
					errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a definition",
						Detail: fmt.Sprintf("rest of %s %q of server %q: %v; it holds the definition without its description, as nexus lock wrote it.", ib.Type, it.Name, name, err), Subject: a.Expr.Range().Ptr()})
				}
			}
			if a := ic.Attributes["flags"]; a != nil {
				v, d := a.Expr.Value(nil)
				ok := !d.HasErrors() && v.IsWhollyKnown() && !v.IsNull() && (v.Type().IsListType() || v.Type().IsTupleType())
				if ok {
					for it2 := v.ElementIterator(); it2.Next(); {
						_, f := it2.Element()
						if f.IsNull() || f.Type() != cty.String {
							ok = false
							break
						}
						it.Flags = append(it.Flags, f.AsString())
					}
				}
				if !ok {
					errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a list of strings",
						Detail: "flags must be a list of quoted strings, the findings nexus lock --accept-flagged accepted.", Subject: a.Expr.Range().Ptr()})
				}
			}
			switch {
			case it.SHA256 != "" && !hexSHA256.MatchString(it.SHA256):
				errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Not a sha256",
					Detail: "sha256 must be 64 lowercase hex digits; a lockfile is written by nexus lock, not by hand.", Subject: ic.Attributes["sha256"].Expr.Range().Ptr()})
			case it.SHA256 != "" && it.Rest != "":
				if err := it.verify(); err != nil {
					errs = append(errs, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Edited by hand",
						Detail: fmt.Sprintf("the sha256 of %s %q of server %q is not the hash of the description and rest written beside it (%v), so what a reviewer reads is not what is pinned; "+
							"write the entry anew from the live server with nexus lock --server %s and review that diff", ib.Type, it.Name, name, err, name),
						Subject: ic.Attributes["sha256"].Expr.Range().Ptr()})
				}
			}
			switch ib.Type {
			case "tool":
				s.Tools = append(s.Tools, it)
			case "prompt":
				s.Prompts = append(s.Prompts, it)
			default:
				s.Templates = append(s.Templates, it)
			}
		}
		sortItems(s.Tools)
		sortItems(s.Prompts)
		sortItems(s.Templates)
		l.Servers = append(l.Servers, s)
	}
	if errs.HasErrors() {
		return nil, lockErr(errs)
	}
	slices.SortFunc(l.Servers, func(a, b *Server) int { return strings.Compare(a.Name, b.Name) })
	return l, nil
}

// lockErr renders diagnostics as file:line:column: summary: detail, one a
// line, with the fix.
func lockErr(ds hcl.Diagnostics) error {
	var b strings.Builder
	for _, d := range ds {
		if d.Severity != hcl.DiagError {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		if d.Subject != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString(": " + d.Detail)
		}
	}
	b.WriteString("\nThe lockfile is written by nexus lock: restore it from version control, or write it anew with nexus lock (and review the diff).")
	return fmt.Errorf("%s", b.String())
}
