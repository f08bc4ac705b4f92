package host

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
)

// Lock is a tool lockfile (nexus.lock.hcl): the tools, prompts and
// resource templates of each server pinned as they were reviewed. A host
// given one (Options.Lock) withholds every tool that is not pinned as it
// is now. ReadLock reads one; Host.Relock writes one.
type Lock struct{ l *lock.Lock }

func wrapLock(l *lock.Lock) *Lock {
	if l == nil {
		return nil
	}
	return &Lock{l}
}

func (l *Lock) lock() *lock.Lock {
	if l == nil {
		return nil
	}
	return l.l
}

// Servers are the names of the servers l pins, sorted.
func (l *Lock) Servers() []string {
	if l == nil {
		return nil
	}
	names := make([]string, len(l.l.Servers))
	for i, s := range l.l.Servers {
		names[i] = s.Name
	}
	return names
}

// Drift is a tool the lockfile withholds as its server defines it now:
// its pin, the changed fields and the chain's findings (Host.Drift).
type Drift struct {
	Server string
	Live   LockItem  // the definition now (Flags empty)
	Pinned *LockItem // its pin; nil when the tool, or its whole server, is not pinned
	// Fields are where the rest of the definition (all but the
	// description) changed since the pin.
	Fields []LockField
	// Flags are the findings of the chain's tools/list policies against
	// the definition now ("link: finding", as nexus lock --accept-flagged
	// writes them).
	Flags []string
	Why   string // the reason the lockfile withholds it, as agents are told
}

// LockItem is one tool as the lockfile pins it, or as its server defines
// it now.
type LockItem struct {
	Name        string
	SHA256      string
	Description string
	// Rest is the canonical JSON of the definition without its
	// description: its title, schemas and annotations.
	Rest string
	// Flags are the findings a person accepted with nexus lock
	// --accept-flagged. Not part of the hash.
	Flags []string
}

// drift is d as host shows it.
func drift(d lock.Drift) Drift {
	out := Drift{Server: d.Server, Live: LockItem(d.Live), Flags: d.Flags, Why: d.Why}
	if d.Pinned != nil {
		p := LockItem(*d.Pinned)
		out.Pinned = &p
	}
	for _, f := range d.Fields {
		out.Fields = append(out.Fields, LockField(f))
	}
	return out
}

// LockPath is where cfg's lockfile lives: nexus.lock.hcl beside its first
// config file (the working directory for the built-in default).
func LockPath(cfg *Config) string {
	if c := internalConfig(cfg); c != nil && len(c.Files) > 0 && c.Files[0].Path != "" {
		return filepath.Join(filepath.Dir(c.Files[0].Path), lock.FileName)
	}
	return lock.FileName
}

// ReadLock reads cfg's lockfile (LockPath) for Options.Lock. None is
// (nil, nil); one that cannot be used is an error that says where and
// what is wrong, since running unpinned because of it would be silent.
func ReadLock(cfg *Config) (*Lock, error) { return ReadLockFile(LockPath(cfg)) }

// ReadLockFile reads the lockfile at path, as ReadLock does.
func ReadLockFile(path string) (*Lock, error) {
	l, err := lock.Read(path)
	return wrapLock(l), hostErr(err)
}

// LockOptions say what Relock pins, and where.
type LockOptions struct {
	// Agent is whom the servers are listed for: the chain's tools/list
	// policies review the definitions as it.
	Agent string
	// Path is the lockfile (LockPath of the host's config when "").
	Path string
	// Pinned is the lockfile as read (ReadLockFile) to compare with; nil
	// is none. Anew writes the new one whole instead of changing the file
	// under its file lock: for a lockfile that could not be read.
	Pinned *Lock
	Anew   bool
	// Server pins that server alone; the others stay as pinned.
	Server string
	// Check compares and writes nothing.
	Check bool
	// AcceptFlagged pins the tools the chain's tools/list policies flag,
	// with their findings beside them; otherwise a flagged tool keeps its
	// previous pin (if any) and is reported in Relocked.Flagged.
	AcceptFlagged bool
}

// Relocked is what Relock found and did.
type Relocked struct {
	Path string
	// Changes are the differences between the old lockfile and what the
	// servers offer now, the flagged tools last.
	Changes []LockChange `json:"changes"`
	// Flagged are the tools not pinned because a policy flags them.
	Flagged []LockChange `json:"-"`
	// Servers counts the servers the lockfile now pins.
	Servers int `json:"-"`
}

// LockChange is one difference between a pinned server and what it
// offers.
type LockChange struct {
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
	Fields []LockField `json:"fields,omitempty"`
	// Flags are the findings against a "flagged" item: the chain's
	// tools/list policies flag it, and no one accepted them.
	Flags []string `json:"flags,omitempty"`
}

// LockField is one place where the rest of a definition changed: a path
// into it, such as inputSchema.properties.notes, and its JSON before and
// after ("" where it was or is absent), each cut short.
type LockField struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
	// More, on the last field of a list cut short, is how many fields
	// were left out (its Path says so in words).
	More int `json:"more,omitempty"`
}

// String is the change as a person reads it in a review.
func (c LockChange) String() string { return c.lock().String() }

func (c LockChange) lock() lock.Change {
	l := lock.Change{Server: c.Server, Kind: c.Kind, Name: c.Name, What: c.What, Old: c.Old, New: c.New,
		OnlyDefinition: c.OnlyDefinition, Flags: c.Flags}
	for _, f := range c.Fields {
		l.Fields = append(l.Fields, lock.Field(f))
	}
	return l
}

func lockChanges(in []lock.Change) []LockChange {
	out := make([]LockChange, len(in))
	for i, c := range in {
		out[i] = LockChange{Server: c.Server, Kind: c.Kind, Name: c.Name, What: c.What, Old: c.Old, New: c.New,
			OnlyDefinition: c.OnlyDefinition, Flags: c.Flags}
		for _, f := range c.Fields {
			out[i].Fields = append(out[i].Fields, LockField(f))
		}
	}
	return out
}

// Relock connects the configured servers (or o.Server alone), pins what
// each offers now against o.Pinned and, unless o.Check, writes the
// lockfile: under its file lock, so that a change another process made
// meanwhile to a server this run did not pin is kept. An unknown
// o.Server is an *UnknownServerError.
func (h *Host) Relock(ctx context.Context, o LockOptions) (*Relocked, error) {
	cfg := h.e.Config()
	if o.Path == "" {
		o.Path = LockPath(h.Config())
	}
	pinned := o.Pinned.lock()
	if pinned == nil {
		pinned = &lock.Lock{}
	}
	names := cfg.Names()
	if o.Server != "" {
		if !slices.Contains(names, o.Server) {
			return nil, &UnknownServerError{Name: o.Server, Known: names}
		}
		names = []string{o.Server}
	}
	next := &lock.Lock{}
	if o.Server != "" {
		next.Servers = slices.Clone(pinned.Servers) // the others stay as pinned
	}
	defs := map[string]Definitions{}
	tools := map[string][]mcp.Tool{}
	for _, name := range names {
		if s := cfg.Server(name); s == nil || !s.Enabled {
			continue
		}
		d, err := h.Definitions(ctx, o.Agent, name)
		if err != nil {
			return nil, hostErr(err)
		}
		defs[name], tools[name] = d, d.Tools
	}
	flagged, err := h.e.Review(ctx, o.Agent, tools)
	if err != nil {
		return nil, hostErr(err)
	}
	var changes, refused []lock.Change
	for _, name := range names {
		d, ok := defs[name]
		if !ok {
			continue
		}
		live, err := lock.Pin(name, d.Info, d.Tools, d.Prompts, d.Templates)
		if err != nil {
			return nil, hostErr(fmt.Errorf("server %q: %w", name, err))
		}
		refused = append(refused, screen(live, pinned.Server(name), flagged[name], o.AcceptFlagged)...)
		changes = append(changes, lock.Diff(pinned.Server(name), live)...)
		next.Put(live)
	}
	changes = append(changes, refused...)
	r := &Relocked{Path: o.Path, Changes: lockChanges(changes), Flagged: lockChanges(refused), Servers: len(next.Servers)}
	if o.Check {
		return r, nil
	}
	if o.Anew {
		err = next.WriteFile(o.Path)
	} else {
		_, err = lock.Update(ctx, o.Path, func(cur *lock.Lock) error {
			if o.Server == "" {
				cur.Servers = next.Servers
			} else if s := next.Server(o.Server); s != nil {
				cur.Put(s)
			}
			return nil
		})
	}
	if err != nil {
		return nil, hostErr(err)
	}
	return r, nil
}

// screen applies the chain's findings to a server's new entry: a flagged
// tool is pinned only when accept is set, or when the old entry pinned
// the very same definition with accepted findings (a person has said yes
// to it before); otherwise its old pin stays, or it is left out, and it
// is returned as a "flagged" change.
func screen(live, old *lock.Server, flags map[string][]policy.Flag, accept bool) []lock.Change {
	var refused []lock.Change
	kept := live.Tools[:0]
	for _, it := range live.Tools {
		fs := flags[it.Name]
		if len(fs) == 0 {
			kept = append(kept, it)
			continue
		}
		texts := make([]string, len(fs))
		for i, f := range fs {
			texts[i] = f.String()
		}
		var prev *lock.Item
		if old != nil {
			prev = old.Tool(it.Name)
		}
		if accept || prev != nil && prev.SHA256 == it.SHA256 && len(prev.Flags) > 0 {
			it.Flags = texts
			kept = append(kept, it)
			continue
		}
		refused = append(refused, lock.Change{Server: live.Name, Kind: "tool", Name: it.Name, What: "flagged", New: it.Description, Flags: texts})
		if prev != nil {
			kept = append(kept, *prev)
		}
	}
	live.Tools = kept
	return refused
}

// The conversions above keep host's types in step with lock's.
var _ = LockField(lock.Field{})
