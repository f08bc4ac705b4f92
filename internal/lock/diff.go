package lock

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Pin makes a server's entry from what it offers now.
func Pin(name string, info mcp.Implementation, tools []mcp.Tool, prompts []mcp.Prompt, templates []mcp.ResourceTemplate) (*Server, error) {
	s := &Server{Name: name, Info: strings.TrimSpace(info.Name + " " + info.Version)}
	for _, t := range tools {
		it, err := ToolItem(t)
		if err != nil {
			return nil, err
		}
		s.Tools = append(s.Tools, it)
	}
	for _, p := range prompts {
		it, err := PromptItem(p)
		if err != nil {
			return nil, err
		}
		s.Prompts = append(s.Prompts, it)
	}
	for _, t := range templates {
		it, err := TemplateItem(t)
		if err != nil {
			return nil, err
		}
		s.Templates = append(s.Templates, it)
	}
	sortItems(s.Tools)
	sortItems(s.Prompts)
	sortItems(s.Templates)
	return s, nil
}

// Change is one difference between a pinned server and what it offers.
type Change struct {
	Server string `json:"server"`
	Kind   string `json:"kind"` // "tool", "prompt", "template", or "server" for one not pinned at all
	Name   string `json:"name,omitempty"`
	What   string `json:"what"` // "added", "removed", "changed", or "flagged" (see Flags)
	// The descriptions before and after, for a changed or added item.
	Old string `json:"oldDescription,omitempty"`
	New string `json:"newDescription,omitempty"`
	// OnlyDefinition: the description is the same, so the schema, title
	// or annotations changed.
	OnlyDefinition bool `json:"definitionChanged,omitempty"`
	// Fields are the places in the rest of the definition (all but the
	// description) that changed, for a changed item.
	Fields []Field `json:"fields,omitempty"`
	// Flags are the findings against a "flagged" item: the chain's
	// tools/list policies flag it, and no one accepted them.
	Flags []string `json:"flags,omitempty"`
}

// Field is one place where the rest of a definition changed: a path into
// it, such as inputSchema.properties.notes, and its JSON before and after
// ("" where it was or is absent), each cut to maxFieldText bytes.
type Field struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
	// More, on the last field of a list cut at maxFields, is how many
	// fields were left out (its Path says so in words).
	More int `json:"more,omitempty"`
}

func (f Field) String() string {
	switch {
	case f.More > 0:
		return f.Path
	case f.Old == "":
		return f.Path + ": added " + f.New
	case f.New == "":
		return f.Path + ": removed (was " + f.Old + ")"
	}
	return f.Path + ": was " + f.Old + ", now " + f.New
}

const (
	maxFields    = 20  // per change; one more says how many were left out
	maxFieldText = 200 // bytes of JSON per side
)

// Fields lists where the rest of live's definition (all but the
// description) differs from pinned's.
func Fields(pinned, live Item) []Field { return fields(pinned.Rest, live.Rest) }

// Count is how many fields differ in fs, a list Fields made, counting
// those a cut list leaves out.
func Count(fs []Field) int {
	n := 0
	for _, f := range fs {
		n += max(f.More, 1)
	}
	return n
}

// fields lists where the canonical JSON rest of a definition changed.
func fields(old, now string) []Field {
	var a, b any
	if json.Unmarshal([]byte(old), &a) != nil || json.Unmarshal([]byte(now), &b) != nil {
		return nil
	}
	var out []Field
	more := 0
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			keys := make([]string, 0, len(am)+len(bm))
			for k := range am {
				keys = append(keys, k)
			}
			for k := range bm {
				if _, ok := am[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(joinPath(path, k), am[k], bm[k])
			}
			return
		}
		as, aok := a.([]any)
		bs, bok := b.([]any)
		if aok && bok && len(as) == len(bs) {
			for i := range as {
				walk(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i])
			}
			return
		}
		if reflect.DeepEqual(a, b) {
			return
		}
		if len(out) == maxFields {
			more++
			return
		}
		out = append(out, Field{Path: path, Old: fieldText(a), New: fieldText(b)})
	}
	walk("", a, b)
	if more > 0 {
		out = append(out, Field{Path: fmt.Sprintf("(and %d more)", more), More: more})
	}
	return out
}

var ident = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

func joinPath(path, key string) string {
	if !ident.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldText(v any) string {
	if v == nil {
		return ""
	}
	b, _ := json.Marshal(v)
	if len(b) > maxFieldText {
		return string(b[:maxFieldText]) + "..."
	}
	return string(b)
}

// String is the change as one line for a person.
func (c Change) String() string {
	if c.Kind == "server" {
		return fmt.Sprintf("server %s: not in the lockfile", c.Server)
	}
	s := fmt.Sprintf("%s %s.%s: %s", c.Kind, c.Server, c.Name, c.What)
	switch {
	case c.What == "changed" && c.OnlyDefinition:
		s += " (the description is the same)"
	case c.What == "changed":
		s += fmt.Sprintf("\n    description was: %q\n    description now: %q", c.Old, c.New)
	case c.What == "added" && c.New != "":
		s += fmt.Sprintf("\n    description: %q", c.New)
	}
	for _, f := range c.Fields {
		s += "\n    " + f.String()
	}
	for _, f := range c.Flags {
		s += "\n    " + f
	}
	return s
}

// Diff lists how live differs from what pinned holds for the same server;
// pinned nil means the server is not in the lockfile at all.
func Diff(pinned, live *Server) []Change {
	if pinned == nil {
		return []Change{{Server: live.Name, Kind: "server", What: "added"}}
	}
	var out []Change
	for _, kind := range []struct {
		name      string
		old, live []Item
	}{{"tool", pinned.Tools, live.Tools}, {"prompt", pinned.Prompts, live.Prompts}, {"template", pinned.Templates, live.Templates}} {
		old := map[string]Item{}
		for _, it := range kind.old {
			old[it.Name] = it
		}
		for _, it := range kind.live {
			o, ok := old[it.Name]
			delete(old, it.Name)
			switch {
			case !ok:
				out = append(out, Change{Server: live.Name, Kind: kind.name, Name: it.Name, What: "added", New: it.Description})
			case o.SHA256 != it.SHA256:
				out = append(out, Change{Server: live.Name, Kind: kind.name, Name: it.Name, What: "changed", Old: o.Description, New: it.Description,
					OnlyDefinition: o.Description == it.Description, Fields: Fields(o, it)})
			}
		}
		for _, it := range kind.old {
			if _, gone := old[it.Name]; gone {
				out = append(out, Change{Server: live.Name, Kind: kind.name, Name: it.Name, What: "removed", Old: it.Description})
			}
		}
	}
	return out
}
