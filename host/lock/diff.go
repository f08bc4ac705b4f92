package lock

import (
	"fmt"
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
	What   string `json:"what"` // "added", "removed" or "changed"
	// The descriptions before and after, for a changed or added item.
	Old string `json:"oldDescription,omitempty"`
	New string `json:"newDescription,omitempty"`
	// OnlyDefinition: the description is the same, so the schema, title
	// or annotations changed.
	OnlyDefinition bool `json:"definitionChanged,omitempty"`
}

// String is the change as one line for a person.
func (c Change) String() string {
	if c.Kind == "server" {
		return fmt.Sprintf("server %s: not in the lockfile", c.Server)
	}
	s := fmt.Sprintf("%s %s.%s: %s", c.Kind, c.Server, c.Name, c.What)
	switch {
	case c.What == "changed" && c.OnlyDefinition:
		s += " (its schema, title or annotations; the description is the same)"
	case c.What == "changed":
		s += fmt.Sprintf("\n    description was: %q\n    description now: %q", c.Old, c.New)
	case c.What == "added" && c.New != "":
		s += fmt.Sprintf("\n    description: %q", c.New)
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
					OnlyDefinition: o.Description == it.Description})
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
