package console

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/lock"
)

// The lockfile page: each definition the lockfile withholds, as a diff
// against its pin with the tool-poisoning findings against it, and an
// admin's accept (the lockfile is written as nexus lock writes it, and
// enforced at once here and, through the file, on every replica) or
// reject (the pin stays; the tool stays withheld). Both are audited
// with who and why before they are done.

// Lockfile is what the console reads of the lockfile the gateway
// enforces, and changes in it (the host, with the lockfile's path).
type Lockfile interface {
	// Enforcing says whether the gateway enforces a lockfile at all.
	Enforcing() bool
	// Drift is every tool the lockfile withholds now; an error names the
	// servers that could not be listed (the others' drift is returned).
	Drift(ctx context.Context) ([]lock.Drift, error)
	// Accept pins server's tool as it is now, if its definition is still
	// the one with sha256 (the one the person reviewed).
	Accept(ctx context.Context, server, tool, sha256 string) (lock.Drift, error)
}

// Bounds of the lockfile page.
const (
	driftWait    = 20 * time.Second // listing the servers for the page
	acceptWait   = 30 * time.Second // an accept: listing, locking, writing
	maxDiffText  = 64 << 10         // of a description, each side
	maxDiffLines = 400              // lines of a description's diff
	maxRejected  = 1024             // rejections remembered
	maxReason    = 1024             // bytes of a person's reason kept
)

// rejection is a person's no to one definition: shown beside it while
// the server keeps offering it.
type rejection struct {
	SHA256, Who, Why string
	At               time.Time
}

type rejections struct {
	mu sync.Mutex
	m  map[string]rejection // server "\x00" tool
}

func (r *rejections) put(server, tool string, x rejection) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil || len(r.m) >= maxRejected {
		r.m = map[string]rejection{}
	}
	r.m[server+"\x00"+tool] = x
}

func (r *rejections) get(server, tool, sha256 string) *rejection {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x, ok := r.m[server+"\x00"+tool]; ok && x.SHA256 == sha256 {
		return &x
	}
	return nil
}

type lockfileView struct {
	Enforcing bool
	Error     string
	Rows      []driftRow
}

type driftRow struct {
	Server, Name, Kind, Why string
	Pinned, Live            string // sha256s ("" for no pin)
	Desc                    []diffLine
	Fields                  []lock.Field
	Flags                   []string
	Rejected                *rejection
}

// diffLine is one line of a description's diff: Op is "same", "del" or
// "ins".
type diffLine struct {
	Op, Sign, Text string
}

func (k *Console) lockfile(r *http.Request) (string, pageData, int) {
	v := lockfileView{Enforcing: k.c.Lockfile != nil && k.c.Lockfile.Enforcing()}
	d := pageData{Title: "Lockfile drift", Nav: "lockfile", View: &v}
	if !v.Enforcing {
		return "lockfile", d, http.StatusOK
	}
	ctx, cancel := context.WithTimeout(r.Context(), driftWait)
	defer cancel()
	ds, err := k.c.Lockfile.Drift(ctx)
	if err != nil {
		v.Error = err.Error()
	}
	for _, x := range ds {
		row := driftRow{Server: x.Server, Name: x.Live.Name, Kind: x.Kind(), Why: x.Why, Live: x.Live.SHA256,
			Fields: x.Fields, Flags: x.Flags, Rejected: k.rejected.get(x.Server, x.Live.Name, x.Live.SHA256)}
		old := ""
		if x.Pinned != nil {
			row.Pinned, old = x.Pinned.SHA256, x.Pinned.Description
		}
		row.Desc = lineDiff(old, x.Live.Description)
		if x.Pinned == nil {
			// Nothing to compare the rest with: show it whole, as added.
			row.Fields = []lock.Field{{Path: "(definition)", New: x.Live.Rest}}
		}
		v.Rows = append(v.Rows, row)
	}
	return "lockfile", d, http.StatusOK
}

// lineDiff is the diff of two descriptions by line: the lines both start
// and end with, and between them what was removed and what was added.
// Enough for a description (a rug pull adds or rewrites sentences), and
// linear, so a 1 MB description costs no more than reading it; each
// side is cut at maxDiffText, and the diff at maxDiffLines.
func lineDiff(old, now string) []diffLine {
	cut := func(s string) (string, bool) {
		if len(s) > maxDiffText {
			return s[:maxDiffText], true
		}
		return s, false
	}
	old, oldCut := cut(old)
	now, nowCut := cut(now)
	var a, b []string
	if old != "" {
		a = strings.Split(old, "\n")
	}
	if now != "" {
		b = strings.Split(now, "\n")
	}
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var out []diffLine
	add := func(op, sign string, lines []string) {
		for _, l := range lines {
			out = append(out, diffLine{op, sign, l})
		}
	}
	add("same", " ", a[:pre])
	add("del", "-", a[pre:len(a)-suf])
	add("ins", "+", b[pre:len(b)-suf])
	add("same", " ", a[len(a)-suf:])
	if len(out) > maxDiffLines {
		n := len(out) - maxDiffLines
		out = append(out[:maxDiffLines], diffLine{"same", "…", "(" + strconv.Itoa(n) + " more lines not shown)"})
	}
	if oldCut || nowCut {
		out = append(out, diffLine{"same", "…", "(cut: the description is longer than 64 KiB; nexus lock --check shows it whole)"})
	}
	if len(out) == 0 {
		out = append(out, diffLine{"same", " ", "(no description)"})
	}
	return out
}

// decide reads an accept's or a reject's form: which definition, and why.
func decide(r *http.Request) (server, tool, sum, why string) {
	server, tool, sum = r.PostFormValue("server"), r.PostFormValue("tool"), r.PostFormValue("sha256")
	why = strings.TrimSpace(r.PostFormValue("reason"))
	return server, tool, sum, why[:min(len(why), maxReason)]
}

func (k *Console) acceptDrift(w http.ResponseWriter, r *http.Request, _ string, s *login) {
	server, tool, sum, why := decide(r)
	if k.lockRefused(w, r, server, tool, sum, why) {
		return
	}
	// Recorded first: a change the audit log cannot record is not made.
	rec := audit.Record{Agent: "console", Server: server, Tool: tool, Method: "console/lockfile/accept", Decision: "allow", Link: "console",
		Reason: "accepted by " + s.who + " (sha256 " + sum + "): " + why}
	if err := k.c.Record(rec); err != nil {
		k.refuse(w, r, http.StatusServiceUnavailable, "The definition was not accepted: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), acceptWait)
	defer cancel()
	d, err := k.c.Lockfile.Accept(ctx, server, tool, sum)
	if err != nil {
		rec.Decision, rec.Reason = "error", "not accepted: "+err.Error()
		k.c.Record(rec) // the refusal below says what happened either way
		k.refuse(w, r, http.StatusConflict, "The definition was not accepted: "+err.Error())
		return
	}
	k.log.Info("console: definition accepted into the lockfile", "who", s.who, "server", server, "tool", tool, "sha256", sum, "flags", len(d.Flags))
	http.Redirect(w, r, "/lockfile", http.StatusSeeOther)
}

func (k *Console) rejectDrift(w http.ResponseWriter, r *http.Request, _ string, s *login) {
	server, tool, sum, why := decide(r)
	if k.lockRefused(w, r, server, tool, sum, why) {
		return
	}
	rec := audit.Record{Agent: "console", Server: server, Tool: tool, Method: "console/lockfile/reject", Decision: "deny", Link: "console",
		Reason: "rejected by " + s.who + " (sha256 " + sum + "): " + why}
	if err := k.c.Record(rec); err != nil {
		k.refuse(w, r, http.StatusServiceUnavailable, "The rejection was not recorded: "+err.Error())
		return
	}
	// The pin stays as it is, so the tool stays withheld; the page shows
	// who said no while the server keeps offering this definition.
	k.rejected.put(server, tool, rejection{SHA256: sum, Who: s.who, Why: why, At: time.Now()})
	k.log.Info("console: definition rejected", "who", s.who, "server", server, "tool", tool, "sha256", sum)
	http.Redirect(w, r, "/lockfile", http.StatusSeeOther)
}

// lockRefused refuses an accept or reject that cannot be made, saying why.
func (k *Console) lockRefused(w http.ResponseWriter, r *http.Request, server, tool, sum, why string) bool {
	switch {
	case k.c.Lockfile == nil || !k.c.Lockfile.Enforcing():
		k.refuse(w, r, http.StatusNotFound, "The gateway enforces no lockfile, so nothing is withheld; nexus lock writes one.")
	case server == "" || tool == "" || !isSHA256(sum):
		k.refuse(w, r, http.StatusBadRequest, "This form does not name a definition (a server, a tool and its sha256); reload the lockfile page and try again.")
	case why == "":
		k.refuse(w, r, http.StatusBadRequest, "Say why: the audit log records the reason with who decided.")
	default:
		return false
	}
	return true
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
