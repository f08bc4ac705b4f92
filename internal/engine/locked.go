package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Enforcing the lockfile (Options.Lock): a tool whose definition is not
// the one pinned, or that is not pinned at all, is withheld: not listed,
// and a call is refused naming what changed and how to review and accept
// it. Servers the lockfile does not name at all are withheld whole, since
// every tool of theirs is new. Checked wherever the tool list is read, so
// a re-list after notifications/tools/list_changed is checked too.

// lockVerdicts caches a tool's verdict by the version of its server's
// tool list (mcp.Client.ToolsVersion), so an unchanged catalog is not
// hashed again, and a call pays a map lookup. It holds at most
// maxLockVerdicts entries: a server that renames its tools on every list
// must not grow it without end.
type lockVerdicts struct {
	mu   sync.Mutex
	seen map[string]lockVerdict // server "\x00" tool
	// swapped are OnLockSwap's callbacks.
	swapped []func(old, new *lock.Lock)
}

type lockVerdict struct {
	ver  uint64 // the list version it was reached on
	pins uint64 // the lockfile it was reached with (core.pinGen)
	why  string // withholding reason ("" = pinned)
}

const maxLockVerdicts = 4096

// withheld says why the lockfile withholds server's tool t, from version
// ver of the server's tool list (0: not cached), or "".
func (h *Host) withheld(server string, t *mcp.Tool, ver uint64) string {
	// The generation first, then the lockfile: SetLock stores them the
	// other way round, so a verdict is never kept under a newer
	// generation than the lockfile it was reached with.
	pins := h.pinGen.Load()
	l := h.pins.Load()
	if l == nil {
		return ""
	}
	key := server + "\x00" + t.Name
	h.lockv.mu.Lock()
	v, ok := h.lockv.seen[key]
	h.lockv.mu.Unlock()
	if ok && ver != 0 && v.ver == ver && v.pins == pins {
		return v.why
	}
	why, isNew := lockReason(l, server, t)
	if why != "" {
		if h.lockWarns(isNew) {
			h.log.Warn("tool not pinned as it is, allowed (lock { on_change/on_new = \"warn\" })", "server", server, "tool", t.Name, "why", why)
			why = ""
		} else {
			h.log.Warn("tool withheld by the lockfile", "server", server, "tool", t.Name, "why", why)
		}
	}
	if ver == 0 {
		return why
	}
	h.lockv.mu.Lock()
	if h.lockv.seen == nil || len(h.lockv.seen) >= maxLockVerdicts {
		h.lockv.seen = map[string]lockVerdict{}
	}
	h.lockv.seen[key] = lockVerdict{ver, pins, why}
	h.lockv.mu.Unlock()
	return why
}

// lockWarns says whether the lock block lets a tool the lockfile does
// not cover through with a warning: a new one (isNew) or a changed one.
func (h *Host) lockWarns(isNew bool) bool {
	action := config.LockBlock
	if p := h.cfg.Lock; p != nil {
		action = p.OnChange
		if isNew {
			action = p.OnNew
		}
	}
	return action == config.LockWarn
}

// SetLock makes l the lockfile h and its sessions enforce from now on,
// without a restart: the next listing and the next call are checked
// against it (verdicts reached on the one before are dropped). nil stops
// enforcing.
func (h *Host) SetLock(l *lock.Lock) {
	old := h.pins.Swap(l)
	h.pinGen.Add(1)
	h.lockv.mu.Lock()
	h.lockv.seen = nil
	fns := slices.Clone(h.lockv.swapped)
	h.lockv.mu.Unlock()
	for _, fn := range fns {
		fn(old, l)
	}
}

// OnLockSwap calls fn after each SetLock of h or of any host sharing its
// configuration (NewSession's), with the lockfile before and after: the
// gateway announces tools/list_changed to the agents whose tools the
// swap changed (LockSwapChanges). fn runs on SetLock's caller, so it
// must not wait on anything.
func (h *Host) OnLockSwap(fn func(old, new *lock.Lock)) {
	h.lockv.mu.Lock()
	h.lockv.swapped = append(h.lockv.swapped, fn)
	h.lockv.mu.Unlock()
}

// LockSwapChanges says whether swapping lockfile old for new changes
// which tools agent sees on h's live connections: a tool one withholds
// and the other lets through, as its server last listed it (no server
// is asked, nothing is logged). A server that comes into the lockfile,
// or leaves it, changes its tools too.
func (h *Host) LockSwapChanges(agent string, old, new *lock.Lock) bool {
	verdict := func(l *lock.Lock, server string, t *mcp.Tool) bool {
		if l == nil {
			return true
		}
		why, isNew := lockReason(l, server, t)
		return why == "" || h.lockWarns(isNew)
	}
	for server, c := range h.reg.Live(agent) {
		tools, ok := c.CachedTools()
		if !ok {
			continue
		}
		for i := range tools {
			if verdict(old, server, &tools[i]) != verdict(new, server, &tools[i]) {
				return true
			}
		}
	}
	return false
}

// Lockfile is the lockfile h enforces now, or nil.
func (h *Host) Lockfile() *lock.Lock { return h.pins.Load() }

// WatchLock follows the lockfile at path until ctx ends, looking every
// interval: when another process (a replica's console, nexus lock)
// changes it, h enforces the new one at once (SetLock). A file that
// becomes unusable or is removed changes nothing: the lockfile in force
// stays, and the log says why, since running unpinned because of a
// broken file would be silent.
func (h *Host) WatchLock(ctx context.Context, path string, every time.Duration) {
	lock.Watch(ctx, path, every, h.pins.Load(), func(l *lock.Lock, err error) {
		switch {
		case err != nil:
			h.log.Error("the lockfile changed but cannot be used; the one loaded before stays in force", "path", path, "error", err)
		case l == nil:
			h.log.Warn("the lockfile was removed; the one loaded before stays in force until nexus serve restarts", "path", path)
		default:
			h.SetLock(l)
			h.log.Info("the lockfile changed; enforcing it now", "path", path, "servers", len(l.Servers))
		}
	})
}

// Drift lists the tools the lockfile withholds as their servers define
// them now, each with its pin and the findings of the chain's tools/list
// policies against it: what a person reviews before accepting a change.
// It connects the enabled servers (as the command line does, for nexus
// lock); those that cannot be listed are in the error, the others' drift
// is still returned. Without a lockfile nothing is withheld.
func (h *Host) Drift(ctx context.Context) ([]lock.Drift, error) {
	return h.drift(ctx, "")
}

// drift is Drift for one server, or every one when only is "".
func (h *Host) drift(ctx context.Context, only string) ([]lock.Drift, error) {
	l := h.pins.Load()
	if l == nil {
		return nil, nil
	}
	defs := map[string][]mcp.Tool{}
	var errs []error
	for _, s := range h.cfg.Servers {
		if !s.Enabled || only != "" && s.Name != only {
			continue
		}
		c, err := h.reg.Client(ctx, s.Name, CLIAgent)
		if err == nil && c.Capabilities().Tools != nil {
			defs[s.Name], err = c.Tools(ctx)
		}
		if err != nil {
			errs = append(errs, h.Explain(s.Name, err))
		}
	}
	var out []lock.Drift
	for server, tools := range defs {
		for i := range tools {
			t := &tools[i]
			why, isNew := lockReason(l, server, t)
			if why == "" || h.lockWarns(isNew) {
				continue
			}
			live, err := lock.ToolItem(*t)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: its definition cannot be pinned: %w", server, t.Name, err))
				continue
			}
			d := lock.Drift{Server: server, Live: live, Why: why}
			if s := l.Server(server); s != nil {
				if p := s.Tool(t.Name); p != nil {
					pinned := *p
					d.Pinned, d.Fields = &pinned, lock.Fields(pinned, live)
				}
			}
			out = append(out, d)
		}
	}
	if len(out) > 0 {
		flagged, err := h.Review(ctx, CLIAgent, defs)
		if err != nil {
			errs = append(errs, err)
		}
		for i := range out {
			for _, f := range flagged[out[i].Server][out[i].Live.Name] {
				out[i].Flags = append(out[i].Flags, f.String())
			}
		}
	}
	slices.SortFunc(out, func(a, b lock.Drift) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Live.Name, b.Live.Name))
	})
	return out, errors.Join(errs...)
}

// AcceptTool pins server's tool in the lockfile at path as the server
// defines it now, with the findings of the chain's tools/list policies
// written beside it (as nexus lock --accept-flagged does, so the policy
// that flagged it lets this very definition through), and enforces the
// new lockfile at once. sha256 is the definition the person reviewed: one
// that changed again since is not accepted. The file is changed under a
// lock and written whole (lock.Update), in nexus lock's format; other
// replicas learn it by WatchLock.
func (h *Host) AcceptTool(ctx context.Context, path, server, tool, sha256 string) (lock.Drift, error) {
	ds, err := h.drift(ctx, server)
	var d *lock.Drift
	for i := range ds {
		if ds[i].Live.Name == tool {
			d = &ds[i]
		}
	}
	switch {
	case d == nil && err != nil:
		return lock.Drift{}, err
	case d == nil:
		return lock.Drift{}, fmt.Errorf("%s.%s is not withheld by the lockfile now (accepted already, or its server changed it back); reload the page", server, event.Quotable(tool))
	case d.Live.SHA256 != sha256:
		return lock.Drift{}, fmt.Errorf("%s.%s changed again since you reviewed it (its sha256 is now %s); reload the page and review the definition it has now", server, event.Quotable(tool), d.Live.SHA256[:12])
	}
	it := d.Live
	it.Flags = d.Flags
	l, err := lock.Update(ctx, path, func(l *lock.Lock) error {
		s := l.Server(server)
		if s == nil {
			s = &lock.Server{Name: server}
			l.Put(s)
		}
		s.SetTool(it)
		return nil
	})
	if err != nil {
		return lock.Drift{}, err
	}
	h.SetLock(l)
	h.log.Info("tool accepted into the lockfile", "server", server, "tool", tool, "sha256", it.SHA256, "flags", len(it.Flags))
	return *d, nil
}

// lockReason says why the lockfile does not cover server's tool as it
// is, or "", and whether the tool (or its server) is new to it. The reason
// reaches clients, and through them the model, so it never quotes the
// server's text: a changed description is named by its lengths and
// hashes, changed fields by their paths (issue 42: a refusal must not
// deliver the injection it stops). nexus lock --check shows the text.
func lockReason(l *lock.Lock, server string, t *mcp.Tool) (string, bool) {
	name := server + "." + event.Quotable(t.Name)
	s := l.Server(server)
	if s == nil {
		return fmt.Sprintf("server %q is not in the lockfile, so none of its tools is approved; review them, then pin them with nexus lock --server %s", server, server), true
	}
	live, err := lock.ToolItem(*t)
	if err != nil {
		return fmt.Sprintf("%s: its definition cannot be checked against the lockfile (%d bytes of description); review it with nexus lock --check", name, len(t.Description)), false
	}
	if it := s.Tool(t.Name); it != nil {
		if it.SHA256 == live.SHA256 {
			return "", false
		}
		what := "its schema, title or annotations changed (the description is the same)"
		if fs := lock.Fields(*it, live); len(fs) > 0 {
			f := fs[0]
			what = "its definition changed (the description is the same): " + event.QuotablePath(f.Path)
			// Short plain values (a type, a number, a flag) say what
			// changed without quoting anything a model would read as
			// words; any other value is left out.
			if plainValue(f.Old) && plainValue(f.New) {
				switch {
				case f.Old == "":
					what += ": added " + f.New
				case f.New == "":
					what += ": removed (was " + f.Old + ")"
				default:
					what += ": was " + f.Old + ", now " + f.New
				}
			}
			if n := lock.Count(fs); n > 1 {
				what += fmt.Sprintf(" (and %d more)", n-1)
			}
		}
		if it.Description != live.Description {
			what = fmt.Sprintf("its description changed (%d bytes, sha256 %s, now %d bytes, sha256 %s)",
				len(it.Description), event.ShortHash(it.Description), len(live.Description), event.ShortHash(live.Description))
		}
		return fmt.Sprintf("%s is not what the lockfile pins: %s; review it with nexus lock --check, accept it with nexus lock --server %s", name, what, server), false
	}
	return fmt.Sprintf("%s is new since the lockfile was written; review it with nexus lock --check, accept it with nexus lock --server %s", name, server), true
}

// plainValue says whether a field's JSON text is short and plain: a
// word, a number or a boolean, quoted or not.
func plainValue(v string) bool {
	return len(v) <= 32 && strings.Trim(v, `abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"`) == ""
}

// lockDenial is a call the lockfile refuses.
func lockDenial(server, tool, why string) error {
	return &policy.DeniedError{Link: "lock", Kind: policy.KindPolicy, Method: mcp.MethodToolsCall, Server: server, Tool: tool, Reason: why}
}
