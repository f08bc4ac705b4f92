package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// MaxNameLen is the longest tool name LLM providers accept
// (^[a-zA-Z0-9_-]{1,64}$).
const MaxNameLen = 64

// ExposedName is the name a tool is offered under: mcp_<server>_<tool>.
// A name with characters outside [a-zA-Z0-9_-] (replaced by '_'), or over
// 64 characters (cut to 55), gets '_' and 8 hex digits of a hash of the
// exact server and tool names, so it is unique and a pure function of
// them: the same across reconnects and whatever else is listed. The one
// thing it cannot see is the underscore ambiguity (server a_b's tool c
// and server a's tool b_c would both be mcp_a_b_c), which depends on the
// config's other servers: a Namer settles it.
func ExposedName(server, tool string) string {
	return PrefixedName(DefaultPrefix(server), server, tool)
}

// DefaultPrefix is what a server's names are exposed under when its
// config sets no prefix: "mcp_<server>_".
func DefaultPrefix(server string) string { return "mcp_" + server + "_" }

// PrefixedName is the exposed name of a server's tool (or prompt) under
// prefix: prefix+tool with every character outside [a-zA-Z0-9_-] replaced
// by '_', and a name over 64 characters cut to its first 55 plus '_' and
// 8 hex digits of a hash of the exact server and tool names. It is a pure
// function of its arguments, so names stay put across reconnects.
func PrefixedName(prefix, server, tool string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(tool))
	changed := writeSafe(&b, prefix)
	changed = writeSafe(&b, tool) || changed
	name := b.String()
	if !changed && len(name) <= MaxNameLen && name != "" {
		return name
	}
	// A name that had to change carries a hash of the exact server and
	// tool, so it cannot meet the name of a tool that needed no change
	// ("b.c" and "b_c") and does not depend on what else is listed.
	return name[:min(len(name), MaxNameLen-9)] + "_" + shortHash(server, tool, 0)
}

// writeSafe writes s with every byte outside [a-zA-Z0-9_-] as '_' and
// reports whether any was replaced.
func writeSafe(b *strings.Builder, s string) bool {
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c == '-' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
			changed = true
		}
	}
	return changed
}

// Namer names the tools and prompts of one config's servers. A name
// depends only on its server and tool and on the config's server names
// and prefixes, never on what is listed: it is the same across
// reconnects, list orders and agents that see different servers.
type Namer struct {
	prefixes map[string]string // configured prefixes, by server
	plain    map[string]bool   // servers under the default prefix
}

// NewNamer names for a config with these servers, where prefixes holds
// the servers' configured prefixes (a server missing there has
// DefaultPrefix).
func NewNamer(servers []string, prefixes map[string]string) *Namer {
	n := &Namer{prefixes: prefixes, plain: make(map[string]bool, len(servers))}
	for _, s := range servers {
		if _, custom := prefixes[s]; !custom {
			n.plain[s] = true
		}
	}
	return n
}

// Name is the exposed name of server's tool (or prompt): PrefixedName
// under its prefix, except for the underscore ambiguity between two
// servers under the default prefix: server a's tool b_c would be
// mcp_a_b_c, which is server a_b's tool c, so where the config has a
// server a_b, the tools of a that start with b_ carry a hash (as a
// changed name does) and a_b's keep their plain names.
func (n *Namer) Name(server, tool string) string {
	if p, custom := n.prefixes[server]; custom {
		return PrefixedName(p, server, tool)
	}
	name := ExposedName(server, tool)
	if n.shadowed(server, tool) && !strings.HasSuffix(name, "_"+shortHash(server, tool, 0)) {
		name = name[:min(len(name), MaxNameLen-9)] + "_" + shortHash(server, tool, 0)
	}
	return name
}

// shadowed says whether a configured server under the default prefix is
// named server_Y where tool starts with Y_.
func (n *Namer) shadowed(server, tool string) bool {
	for i := 0; i < len(tool); i++ {
		if tool[i] == '_' && n.plain[server+"_"+tool[:i]] {
			return true
		}
	}
	return false
}

func shortHash(server, tool string, salt int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d", server, tool, salt)))
	return hex.EncodeToString(h[:4])
}

// Ref is a tool by its server and its own name.
type Ref struct {
	Server string
	Tool   string
}

// String is the server.tool form the CLI takes.
func (r Ref) String() string { return r.Server + "." + r.Tool }

// Entry is one tool in the catalog.
type Entry struct {
	Name string // exposed name
	Ref
	Tool mcp.Tool
}

// Collision reports two tools whose names came out the same exposed name.
// Under the default prefix a Namer leaves none but a tool named to look
// like another's hashed name; then the later one (in server, tool order)
// got a salted hash. Where a configured prefix made them collide the later
// one is left out (Renamed is "") and the config must change.
type Collision struct {
	Name        string
	First, Then Ref
	Renamed     string
}

func (c Collision) String() string {
	if c.Renamed == "" {
		return fmt.Sprintf("tools %s and %s are both exposed as %q, so %s is left out; give server %q or %q a different prefix (or none, for the default mcp_<server>_)",
			c.First, c.Then, c.Name, c.Then, c.First.Server, c.Then.Server)
	}
	return fmt.Sprintf("tools %s and %s both sanitize to %q; %s is exposed as %q", c.First, c.Then, c.Name, c.Then, c.Renamed)
}

// Catalog maps exposed names to tools and back, exactly.
type Catalog struct {
	Entries    []Entry // sorted by server, then tool
	Collisions []Collision
	byName     map[string]int
	byRef      map[Ref]int
}

// NewCatalog names every tool of every server with n (nil: a Namer for
// just the listed servers, under the default prefix). Names do not depend
// on the order of the lists; with the config's Namer they do not depend on
// which servers are listed either.
func NewCatalog(lists map[string][]mcp.Tool, n *Namer) *Catalog {
	servers := make([]string, 0, len(lists))
	total := 0
	for s, tools := range lists {
		servers = append(servers, s)
		total += len(tools)
	}
	sort.Strings(servers)
	if n == nil {
		n = NewNamer(servers, nil)
	}
	prefixes := n.prefixes
	c := &Catalog{Entries: make([]Entry, 0, total), byName: make(map[string]int, total), byRef: make(map[Ref]int, total)}
	for _, s := range servers {
		// Append the server's tools, sort them by name in place, then name
		// them, compacting out repeats (write index <= read index).
		start := len(c.Entries)
		for _, t := range lists[s] {
			c.Entries = append(c.Entries, Entry{Ref: Ref{s, t.Name}, Tool: t})
		}
		group := c.Entries[start:]
		slices.SortStableFunc(group, func(a, b Entry) int { return strings.Compare(a.Tool.Name, b.Tool.Name) })
		c.Entries = c.Entries[:start]
		for _, e := range group {
			if _, dup := c.byRef[e.Ref]; dup {
				continue // a server listing one name twice: keep the first
			}
			_, custom := prefixes[s]
			name := n.Name(s, e.Tool.Name)
			if i, taken := c.byName[name]; taken && (custom || customOf(prefixes, c.Entries[i].Server)) {
				c.Collisions = append(c.Collisions, Collision{Name: name, First: c.Entries[i].Ref, Then: e.Ref})
				continue
			} else if taken {
				renamed := name
				for salt := 1; ; salt++ {
					renamed = name[:min(len(name), MaxNameLen-9)] + "_" + shortHash(s, e.Tool.Name, salt)
					if _, again := c.byName[renamed]; !again {
						break
					}
				}
				c.Collisions = append(c.Collisions, Collision{Name: name, First: c.Entries[i].Ref, Then: e.Ref, Renamed: renamed})
				name = renamed
			}
			e.Name = name
			c.byName[name] = len(c.Entries)
			c.byRef[e.Ref] = len(c.Entries)
			c.Entries = append(c.Entries, e)
		}
	}
	return c
}

func customOf(prefixes map[string]string, server string) bool {
	_, ok := prefixes[server]
	return ok
}

// Lookup resolves an exposed name or a server.tool reference.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	if i, ok := c.byName[name]; ok {
		return c.Entries[i], true
	}
	if server, tool, ok := strings.Cut(name, "."); ok {
		if i, ok := c.byRef[Ref{server, tool}]; ok {
			return c.Entries[i], true
		}
	}
	return Entry{}, false
}

// Name returns the exposed name of a tool.
func (c *Catalog) Name(r Ref) (string, bool) {
	i, ok := c.byRef[r]
	if !ok {
		return "", false
	}
	return c.Entries[i].Name, true
}
