package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/lock"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/registry"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// What the chain's policies decide about listing a tool holds for calling
// it: a tool a policy withholds from an agent's tools/list (tool-poisoning
// finding a hidden instruction, say) cannot be called by that agent
// either, whether or not the agent listed first. The verdicts are kept per
// agent and tool until the catalog changes, so a call pays one map lookup.

// listVerdict is the chain's verdict on listing one tool to one agent.
type listVerdict struct {
	gen   uint64        // the catalog generation it was reached at: the listing it saw
	ver   uint64        // the version of the server's tool list: the definition it saw
	full  bool          // with the agent's whole listing (Tools), not a call's partial one
	pins  uint64        // the lockfile it was reached with (core.pinGen): its accepted flags
	err   error         // the *policy.DeniedError that withholds the tool, or nil
	flags []policy.Flag // what links flagged on the way
}

// ToolDecision is a decision about a tool that rests on its definition:
// the lockfile (Link "lock") or a tools/list policy withheld it from an
// agent, or a policy flagged it and let it through.
type ToolDecision struct {
	Agent, Server, Tool string
	Method              string // tools/list, or tools/call for a call refused
	Link                string // "lock", or the filter or plugin that decided
	Withheld            bool
	Reason              string
	Flags               []string // the link's findings
}

// toolDecision tells Options.OnToolDecision, and the audit log of a
// listing's (a call's own record holds the call's).
func (h *Host) toolDecision(d ToolDecision) {
	if h.opts.OnToolDecision != nil {
		h.opts.OnToolDecision(d)
	}
	if d.Method != mcp.MethodToolsList {
		return
	}
	w, _ := h.auditLog()
	feed := h.feed
	if w == nil && !feed.Active() {
		return
	}
	decision := event.Allow
	if d.Withheld {
		decision = event.Deny
	}
	rec := audit.Record{Time: time.Now().UTC(), Agent: d.Agent, Session: h.hooks.session, Server: d.Server, Method: d.Method, Tool: d.Tool,
		Decision: decision, Link: d.Link, Reason: d.Reason, Flags: d.Flags}
	if w != nil {
		if err := w.Write(rec); err != nil {
			h.log.Error("the audit log cannot record a withheld tool", "server", d.Server, "tool", d.Tool, "error", err)
		}
	}
	feed.Publish(audit.Decision{Record: rec}) // the console's live stream sees it too
}

// reportVerdict tells OnToolDecision what a tools/list verdict decided:
// the link that withheld the tool, and each link that flagged it.
func (h *Host) reportVerdict(agent, server, tool, method string, v listVerdict) {
	if h.opts.OnToolDecision == nil {
		return
	}
	var de *policy.DeniedError
	errors.As(v.err, &de)
	byLink := map[string][]string{}
	var links []string
	for _, f := range v.flags {
		if byLink[f.Link] == nil {
			links = append(links, f.Link)
		}
		byLink[f.Link] = append(byLink[f.Link], f.Text)
	}
	for _, l := range links {
		if de == nil || l != de.Link {
			h.toolDecision(ToolDecision{Agent: agent, Server: server, Tool: tool, Method: method, Link: l, Flags: byLink[l]})
		}
	}
	if de != nil {
		h.toolDecision(ToolDecision{Agent: agent, Server: server, Tool: tool, Method: method, Link: de.Link, Withheld: true, Reason: de.Reason, Flags: de.Flags})
	}
}

// maxListVerdicts bounds the cache: a server that renames its tools on
// every list must not grow it without end.
const maxListVerdicts = 1 << 16

// listingSeq numbers listings: an id must never come back with other
// tools, in any session of the process, since filters keep a listing by
// its id (and the filter runtime is shared by a gateway's sessions).
var listingSeq atomic.Uint64

// listing is what a tools/list event's policies see of the rest of the
// listing: every tool of entries, under an id of its own.
func listing(entries []registry.Entry) *event.Listing {
	l := &event.Listing{ID: strconv.FormatUint(listingSeq.Add(1), 10), Tools: make([]event.ListedTool, len(entries))}
	for i, e := range entries {
		l.Tools[i] = event.ListedTool{Server: e.Server, Name: e.Tool.Name}
	}
	return l
}

// listEvent is the tools/list event of server's tool t: with its
// definition as the server listed it (not HTML-escaped, so a filter
// reads "<IMPORTANT>" as it is) and the listing it is part of.
func (h *Host) listEvent(agent, server string, t *mcp.Tool, l *event.Listing) *event.Event {
	e := h.event(agent, server, mcp.MethodToolsList, t)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(t) == nil {
		e.Tool.Definition = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	e.Listing = l
	return e
}

// listKey is whose verdict on which tool.
type listKey struct{ agent, server, tool string }

// listed asks the chain whether agent may see server's tool t (nil, or
// the *policy.DeniedError that withholds it), from the cache when it
// holds a verdict reached at gen on version ver of the server's tool list
// (a full one, when full is asked for; ver 0 is never cached). A new
// verdict's flags are logged.
func (h *Host) listed(ctx context.Context, agent, server string, t *mcp.Tool, l func() *event.Listing, gen, ver uint64, full bool) error {
	key := listKey{agent, server, t.Name}
	h.mu.Lock()
	v, ok := h.listv[key]
	h.mu.Unlock()
	pins := h.pinGen.Load()
	if ok && ver != 0 && v.gen == gen && v.ver == ver && v.pins == pins && (v.full || !full) {
		if full {
			h.reportVerdict(agent, server, t.Name, mcp.MethodToolsList, v)
		}
		return v.err
	}
	e := h.listEvent(agent, server, t, l())
	flags, err := h.chain.List(ctx, e, h.acceptedFlags(server, t))
	for _, f := range flags {
		h.log.Warn("tool flagged", "server", server, "tool", t.Name, "by", f.Link, "finding", f.Text)
	}
	var de *policy.DeniedError
	if err != nil && !errors.As(err, &de) || ctx.Err() != nil {
		return err // not a verdict: the chain could not run; ask again next time
	}
	v = listVerdict{gen: gen, ver: ver, full: full, pins: pins, err: err, flags: flags}
	if full {
		h.reportVerdict(agent, server, t.Name, mcp.MethodToolsList, v)
	}
	h.mu.Lock()
	if h.listv == nil || len(h.listv) >= maxListVerdicts {
		h.listv = map[listKey]listVerdict{}
	}
	h.listv[key] = v
	h.mu.Unlock()
	return err
}

// acceptedFlags says, for server's tool t, whether the lockfile accepted a
// link's findings: it pins this very definition (the same sha256) with
// every one of them (nexus lock --accept-flagged writes them as
// "link: finding"). nil without a lockfile.
func (h *Host) acceptedFlags(server string, t *mcp.Tool) func(link string, flags []string) bool {
	l := h.pins.Load()
	if l == nil {
		return nil
	}
	return func(link string, flags []string) bool {
		s := l.Server(server)
		if s == nil {
			return false
		}
		pinned := s.Tool(t.Name)
		if pinned == nil || len(pinned.Flags) == 0 {
			return false
		}
		live, err := lock.ToolItem(*t)
		if err != nil || live.SHA256 != pinned.SHA256 {
			return false
		}
		for _, f := range flags {
			if !slices.Contains(pinned.Flags, link+": "+f) {
				return false
			}
		}
		h.log.Info("tool flagged, listed: the lockfile accepts these findings for this definition", "server", server, "tool", t.Name, "by", link)
		return true
	}
}

// callListed refuses a call of a tool the chain withholds from agent's
// listings. Without a verdict from a listing at this catalog generation,
// it asks the chain with what is at hand: the agent's catalog when it is
// fresh, else the tools of the servers already connected (a nexus call
// connects one server only), so it never connects a server for this.
func (h *Host) callListed(ctx context.Context, agent, server string, t *mcp.Tool, ver uint64) error {
	b, gen, fresh := h.cats.Get(agent)
	// The listing is built only when the verdict is not cached: a call
	// then costs one map lookup.
	l := func() *event.Listing {
		var entries []registry.Entry
		if fresh {
			entries = b.Catalog.Entries
		} else {
			for name, c := range h.reg.Live(agent) {
				if tools, ok := c.CachedTools(); ok {
					for _, tt := range tools {
						entries = append(entries, registry.Entry{Ref: registry.Ref{Server: name, Tool: tt.Name}, Tool: tt})
					}
				}
			}
		}
		return listing(entries)
	}
	err := h.listed(ctx, agent, server, t, l, gen, ver, false)
	var de *policy.DeniedError
	if !errors.As(err, &de) {
		return err
	}
	h.toolDecision(ToolDecision{Agent: agent, Server: server, Tool: t.Name, Method: mcp.MethodToolsCall, Link: de.Link, Withheld: true, Reason: de.Reason, Flags: de.Flags})
	cp := *de
	cp.Method = mcp.MethodToolsCall
	cp.Reason = "withheld from the agent's tools/list: " + de.Reason
	return &cp
}

// Review runs the chain's tools/list policies over the tools of defs (by
// server), as agent would list them together, and returns each flagged
// tool's flags by server and tool name: what nexus lock refuses to pin. A
// tool a policy withholds without flags (an allowlist) is not flagged.
func (h *Host) Review(ctx context.Context, agent string, defs map[string][]mcp.Tool) (map[string]map[string][]policy.Flag, error) {
	if err := h.loadChain(ctx); err != nil {
		return nil, err
	}
	out := map[string]map[string][]policy.Flag{}
	if h.chain.Len() == 0 {
		return out, nil
	}
	var entries []registry.Entry
	for server, tools := range defs {
		for _, t := range tools {
			entries = append(entries, registry.Entry{Ref: registry.Ref{Server: server, Tool: t.Name}, Tool: t})
		}
	}
	l := listing(entries)
	for _, en := range entries {
		e := h.listEvent(agent, en.Server, &en.Tool, l)
		flags, err := h.chain.List(ctx, e, nil)
		var de *policy.DeniedError
		if err != nil && !errors.As(err, &de) {
			return nil, err
		}
		if len(flags) > 0 {
			if out[en.Server] == nil {
				out[en.Server] = map[string][]policy.Flag{}
			}
			out[en.Server][en.Tool.Name] = flags
		}
	}
	return out, nil
}
