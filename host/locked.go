package host

import (
	"fmt"
	"strings"
	"sync"

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
}

type lockVerdict struct {
	ver uint64 // the list version it was reached on
	why string // withholding reason ("" = pinned)
}

const maxLockVerdicts = 4096

// withheld says why the lockfile withholds server's tool t, from version
// ver of the server's tool list (0: not cached), or "".
func (h *Host) withheld(server string, t *mcp.Tool, ver uint64) string {
	l := h.opts.Lock
	if l == nil {
		return ""
	}
	key := server + "\x00" + t.Name
	h.lockv.mu.Lock()
	v, ok := h.lockv.seen[key]
	h.lockv.mu.Unlock()
	if ok && ver != 0 && v.ver == ver {
		return v.why
	}
	why, isNew := lockReason(l, server, t)
	if why != "" {
		action := config.LockBlock
		if p := h.cfg.Lock; p != nil {
			action = p.OnChange
			if isNew {
				action = p.OnNew
			}
		}
		if action == config.LockWarn {
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
	h.lockv.seen[key] = lockVerdict{ver, why}
	h.lockv.mu.Unlock()
	return why
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
