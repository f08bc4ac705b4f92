package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// pageData is what every page's template gets: the login (nil on the
// login page), the CSRF token its forms carry, and the page's own View.
type pageData struct {
	Title string
	Nav   string
	Who   string
	Role  string
	Admin bool
	CSRF  string
	Error string
	View  any
}

var funcs = template.FuncMap{
	"inert": inert,
	"ms":    func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) + " ms" },
	"us":    func(us float64) string { return strconv.FormatFloat(us/1e3, 'f', 3, 64) + " ms" },
	"inc":   func(i int) int { return i + 1 },
	"when":  func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
}

// parsePages parses each page with the layout.
func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range []string{"login", "overview", "decisions", "explain", "sessions", "lockfile", "refused"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: page %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render writes a page; into a buffer first, so a template error is a
// clean 500 rather than half a page.
func (k *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, s *login, d pageData) {
	if s != nil {
		d.Who, d.Role, d.Admin, d.CSRF = s.who, s.role.String(), s.role == roleAdmin, s.csrf
	}
	if d.Nav == "" {
		d.Nav = name
	}
	var buf bytes.Buffer
	if err := k.pages[name].Execute(&buf, d); err != nil {
		k.log.Error("console: a page cannot be rendered", "page", name, "error", err)
		http.Error(w, "console: the page cannot be rendered; the gateway's log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// refuse answers a refused request with a page that says why.
func (k *Console) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	_, s := k.session(r)
	k.render(w, r, status, "refused", s, pageData{Title: "Refused", Nav: "none", Error: why})
}

// page serves a page to a logged-in person.
func (k *Console) page(h func(r *http.Request) (string, pageData, int)) http.HandlerFunc {
	return k.auth(func(w http.ResponseWriter, r *http.Request, s *login) {
		name, d, status := h(r)
		k.render(w, r, status, name, s, d)
	})
}

// ---- overview -------------------------------------------------------------

type serverRow struct {
	Name      string   `json:"name"`
	Status    string   `json:"status"`
	Era       string   `json:"era,omitempty"`
	Version   string   `json:"version,omitempty"`
	Transport string   `json:"transport"`
	Tools     int      `json:"tools"`
	Error     string   `json:"error,omitempty"`
	Fix       []string `json:"fix,omitempty"`
}

type agentRow struct {
	Agent          string `json:"agent"`
	Sessions       int    `json:"sessions"`
	CallsPerMinute int    `json:"calls_per_minute"`
}

// overviewView is one section per replica: this one first, then the
// others that reported to the session store (replicas.go).
type overviewView struct {
	Replicas []replicaStatus
	// StoreError says why the other replicas are not shown.
	StoreError string
}

// eras names the revisions by era, as the registry tells them apart.
var eras = map[string]string{"modern": "2026-07-28", "legacy": "2025-11-25"}

func (k *Console) overview(*http.Request) (string, pageData, int) {
	return "overview", pageData{Title: "Overview", View: k.overviewView()}, http.StatusOK
}

func (k *Console) overviewView() overviewView {
	list, err := k.replicas(k.local())
	v := overviewView{Replicas: list}
	if err != nil {
		v.StoreError = "The other replicas are not shown: " + err.Error()
	}
	return v
}

// local is this replica's status, now.
func (k *Console) local() replicaStatus {
	v := replicaStatus{Replica: k.replica(), Store: k.c.Store, At: time.Now().UTC()}
	for _, s := range k.c.Servers.Servers() {
		row := serverRow{Name: s.Config.Name, Transport: s.Config.Type, Tools: s.Tools, Version: s.Version, Era: eras[s.Era]}
		if row.Transport == "" {
			row.Transport = "stdio"
		}
		err := s.Err
		switch {
		case !s.Config.Enabled:
			row.Status = "disabled"
		case s.Connected:
			row.Status = "connected"
			err = s.ToolsErr
		case s.Err != nil:
			row.Status = "failed"
		default:
			row.Status = "not started"
		}
		if err != nil {
			row.Error, row.Fix = k.report(s.Config.Name, err)
		}
		v.Servers = append(v.Servers, row)
	}
	rates := k.recent.perMinute()
	byAgent := map[string]*agentRow{}
	if k.c.Sessions != nil {
		for _, s := range k.c.Sessions.List() {
			a := byAgent[s.Agent]
			if a == nil {
				a = &agentRow{Agent: s.Agent}
				byAgent[s.Agent] = a
			}
			if !s.Modern {
				a.Sessions++
				v.Sessions++
			}
		}
	}
	for agent := range rates {
		if byAgent[agent] == nil {
			byAgent[agent] = &agentRow{Agent: agent}
		}
	}
	for _, a := range byAgent {
		a.CallsPerMinute = rates[a.Agent]
		v.Agents = append(v.Agents, *a)
	}
	sort.Slice(v.Agents, func(i, j int) bool { return v.Agents[i].Agent < v.Agents[j].Agent })
	return v
}

func (k *Console) replica() string { return k.c.Replica }

// report is an error's problem and fix, as the CLI reports them.
func (k *Console) report(server string, err error) (string, []string) {
	var rep *diag.Report
	if errors.As(k.c.Servers.Explain(server, err), &rep) {
		return rep.Headline(), rep.Fix
	}
	return err.Error(), nil
}

// ---- live decisions -------------------------------------------------------

// filter is the decisions a page asks for: empty fields match all.
type filter struct {
	Agent, Server, Verdict, Link string
}

func filterOf(r *http.Request) filter {
	q := r.URL.Query()
	cut := func(s string) string { return s[:min(len(s), 256)] }
	return filter{Agent: cut(q.Get("agent")), Server: cut(q.Get("server")), Verdict: cut(q.Get("verdict")), Link: cut(q.Get("link"))}
}

func (f filter) match(d *audit.Decision) bool {
	return (f.Agent == "" || f.Agent == d.Agent) && (f.Server == "" || f.Server == d.Server) &&
		(f.Verdict == "" || f.Verdict == d.Decision) && (f.Link == "" || f.Link == d.Link)
}

func (f filter) Query() string {
	q := make([]string, 0, 4)
	for _, kv := range [][2]string{{"agent", f.Agent}, {"server", f.Server}, {"verdict", f.Verdict}, {"link", f.Link}} {
		if kv[1] != "" {
			q = append(q, kv[0]+"="+template.URLQueryEscaper(kv[1]))
		}
	}
	return strings.Join(q, "&")
}

type decisionsView struct {
	Filter   filter
	Verdicts []string
}

func (k *Console) decisions(r *http.Request) (string, pageData, int) {
	return "decisions", pageData{Title: "Live decisions", View: decisionsView{Filter: filterOf(r),
		Verdicts: []string{"allow", "deny", "modify", "error", "would-deny", "would-modify"}}}, http.StatusOK
}

// entry is a decision as the live page gets it, its text made inert.
type entry struct {
	ID      uint64  `json:"id"`
	Time    string  `json:"time"`
	Agent   string  `json:"agent"`
	Method  string  `json:"method"`
	Name    string  `json:"name"`
	Verdict string  `json:"verdict"`
	Link    string  `json:"link"`
	Source  string  `json:"source"`
	Latency float64 `json:"ms"`
	Dropped uint64  `json:"dropped"`
}

// name is what a decision was about, as the agent named it.
func (k *Console) name(d *audit.Decision) string {
	switch {
	case d.Tool != "" && d.Server != "":
		return k.c.Servers.ExposedName(d.Server, d.Tool)
	case d.URI != "":
		return d.Server + " " + d.URI
	case d.Prompt != "":
		return d.Server + "." + d.Prompt
	}
	return d.Server
}

// stream sends the decisions that match the page's filter as server-sent
// events. The page's buffer is bounded: when the page (or the network)
// is slower than the decisions, the feed drops them for this page and
// the count of dropped ones goes with the next event.
func (k *Console) stream(w http.ResponseWriter, r *http.Request, _ *login) {
	f := filterOf(r)
	sub := k.c.Feed.Subscribe(k.c.Buffer)
	defer sub.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	rc.Flush()
	keepalive := time.NewTicker(15 * time.Second)
	defer keepalive.Stop()
	// The page is written to on a tick, with what arrived since: a
	// decision wakes nobody here, so a call pays its publish alone, not a
	// write and a flush each (on a loaded box that CPU is the call's).
	tick := time.NewTicker(streamTick)
	defer tick.Stop()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keepalive.C:
			buf.WriteString(": keepalive\n\n")
		case <-tick.C:
			for range k.c.Buffer {
				var d audit.Decision
				var ok bool
				select {
				case d, ok = <-sub.C:
					if !ok {
						return
					}
				default:
				}
				if !ok {
					break
				}
				if !f.match(&d) {
					continue
				}
				e := entry{ID: d.ID, Time: d.Time.UTC().Format("15:04:05.000"), Agent: inertN(d.Agent, 256), Method: inertN(d.Method, 256),
					Name: inertN(k.name(&d), 512), Verdict: d.Decision, Link: inertN(d.Link, 256), Source: inertN(d.Source, 512),
					Latency: float64(d.Latency.Microseconds()) / 1e3, Dropped: sub.Dropped()}
				buf.WriteString("event: decision\ndata: ")
				enc.Encode(e) // ends with \n
				buf.WriteString("\n")
			}
		}
		if buf.Len() == 0 {
			continue
		}
		// A page that stops reading is let go rather than waited on.
		rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		buf.Reset()
	}
}

// streamTick is how often a live page is sent what arrived: well inside
// the second a person expects, and one write for any number of decisions.
const streamTick = 100 * time.Millisecond

// ---- explain trace --------------------------------------------------------

type explainView struct {
	D     audit.Decision
	Name  string
	Args  string
	Found bool
	// Report is why a refused or failed call did not go through: the
	// report its audit record keeps (audit.Record.SetReport), the one the
	// command line prints and the agent's client reads in brief.
	Report *diag.JSON
}

func (k *Console) explain(r *http.Request) (string, pageData, int) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		return "explain", pageData{Title: "Decision", Error: "That is not a decision's number."}, http.StatusNotFound
	}
	d, ok := k.recent.get(id)
	if !ok {
		return "explain", pageData{Title: "Decision", Error: fmt.Sprintf("Decision %d is no longer kept: the console keeps the last %d; the audit log has every one.", id, k.c.Keep)}, http.StatusNotFound
	}
	v := explainView{D: d, Name: k.name(&d), Found: true}
	if len(d.Report) > 0 {
		var j diag.JSON
		if json.Unmarshal(d.Report, &j) == nil {
			v.Report = &j
		}
	}
	switch {
	case len(d.Args) > 0:
		var out bytes.Buffer
		if json.Indent(&out, d.Args, "", "  ") != nil {
			out.Reset()
			out.Write(d.Args)
		}
		v.Args = out.String()
	case d.ArgsPreview != "":
		v.Args = d.ArgsPreview + " …"
	}
	return "explain", pageData{Title: fmt.Sprintf("Decision %d", id), Nav: "decisions", View: v}, http.StatusOK
}

// ---- sessions -------------------------------------------------------------

// maxSessionRows bounds one page of the sessions list.
const maxSessionRows = 500

type sessionsView struct {
	Rows       []sessionRow
	Total      int
	Page, Next int
	Prev       int
	Gateway    bool
	Bridge     bool // the gateway's continuations are shown
	Waiting    []gateway.Continuation
	More       int // continuations not shown
}

type sessionRow struct {
	ID, Agent, Version, Client string
	Legacy                     bool
}

func (k *Console) sessions(r *http.Request) (string, pageData, int) {
	v := sessionsView{Gateway: k.c.Sessions != nil}
	if k.c.Sessions == nil {
		return "sessions", pageData{Title: "Sessions", View: v}, http.StatusOK
	}
	list := k.c.Sessions.List()
	v.Total = len(list)
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	from := min((page-1)*maxSessionRows, len(list))
	to := min(from+maxSessionRows, len(list))
	for _, s := range list[from:to] {
		v.Rows = append(v.Rows, sessionRow{ID: s.ID, Agent: s.Agent, Version: s.Version, Client: s.Client, Legacy: !s.Modern})
	}
	v.Page = page
	if to < len(list) {
		v.Next = page + 1
	}
	if page > 1 {
		v.Prev = page - 1
	}
	if k.c.Continuations != nil {
		v.Bridge = true
		v.Waiting = k.c.Continuations.Continuations()
		if n := len(v.Waiting); n > maxSessionRows {
			v.Waiting, v.More = v.Waiting[:maxSessionRows], n-maxSessionRows
		}
	}
	return "sessions", pageData{Title: "Sessions", View: v}, http.StatusOK
}

// endContinuation ends a call that waits for its agent's input: its
// upstream call is cancelled, and the agent's retry is told it was ended.
func (k *Console) endContinuation(w http.ResponseWriter, r *http.Request, _ string, s *login) {
	id := r.PostFormValue("id")
	why := strings.TrimSpace(r.PostFormValue("reason"))
	if k.c.Continuations == nil || id == "" {
		k.refuse(w, r, http.StatusNotFound, "There is no such call waiting for input.")
		return
	}
	if why == "" {
		k.refuse(w, r, http.StatusBadRequest, "Say why the call is ended: the audit log records the reason with who ended it.")
		return
	}
	var found *gateway.Continuation
	for _, x := range k.c.Continuations.Continuations() {
		if x.ID == id {
			found = &x
			break
		}
	}
	if found == nil {
		k.refuse(w, r, http.StatusNotFound, "No call waits for input with that id (its agent may have answered, or it expired).")
		return
	}
	// Recorded first: an action the audit log cannot record is not taken.
	rec := audit.Record{Agent: found.Agent, Server: found.Server, Call: id, Method: "console/continuation/end", Decision: "allow", Link: "console",
		Reason: "ended by " + s.who + ": " + why[:min(len(why), 1024)]}
	if err := k.c.Record(rec); err != nil {
		k.refuse(w, r, http.StatusServiceUnavailable, "The call was not ended: "+err.Error())
		return
	}
	if !k.c.Continuations.EndContinuation(id) {
		k.refuse(w, r, http.StatusConflict, "The call stopped waiting before it could be ended (its agent answered, or it expired).")
		return
	}
	k.log.Info("console: a call waiting for input ended", "who", s.who, "call", id, "agent", found.Agent, "server", found.Server)
	http.Redirect(w, r, "/sessions", http.StatusSeeOther)
}

func (k *Console) endSession(w http.ResponseWriter, r *http.Request, _ string, s *login) {
	id := r.PostFormValue("id")
	why := strings.TrimSpace(r.PostFormValue("reason"))
	if k.c.Sessions == nil || id == "" {
		k.refuse(w, r, http.StatusNotFound, "There is no such session.")
		return
	}
	if why == "" {
		k.refuse(w, r, http.StatusBadRequest, "Say why the session is ended: the audit log records the reason with who ended it.")
		return
	}
	var agent string
	for _, x := range k.c.Sessions.List() {
		if x.ID == id {
			agent = x.Agent
		}
	}
	if agent == "" {
		k.refuse(w, r, http.StatusNotFound, "There is no such session (it may have ended already).")
		return
	}
	// Recorded first: an action the audit log cannot record is not taken.
	rec := audit.Record{Agent: agent, Session: id, Method: "console/session/end", Decision: "allow", Link: "console",
		Reason: "ended by " + s.who + ": " + why[:min(len(why), 1024)]}
	if err := k.c.Record(rec); err != nil {
		k.refuse(w, r, http.StatusServiceUnavailable, "The session was not ended: "+err.Error())
		return
	}
	k.c.Sessions.End(id)
	k.log.Info("console: session ended", "who", s.who, "session", id, "agent", agent)
	http.Redirect(w, r, "/sessions", http.StatusSeeOther)
}
