package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// A console with a session store shared by the gateway's replicas
// reports its replica's status there (store.Report: its servers, agents
// and sessions, as the overview shows them) every ReportEvery, for five
// times that: a replica that stops drops off the others' overviews
// within its TTL, and one that stops cleanly at once. Each overview
// shows its own replica as it is now, and every other live one as it
// last reported.
//
// The store is input from outside: what another replica wrote is read
// bounded (the store cuts each status at store.MaxReportBytes, and reads
// at most store.MaxReports), decoded into rows of bounded number, and
// shown inert like any other untrusted text; a status that does not
// decode is shown as damaged, with why, in its replica's row.

// replicaStatus is a replica's status as it reports it, and as the
// overview shows each replica.
type replicaStatus struct {
	Replica  string      `json:"replica"`
	Store    string      `json:"store"`
	At       time.Time   `json:"at"`
	Sessions int         `json:"sessions"`
	Servers  []serverRow `json:"servers"`
	Agents   []agentRow  `json:"agents"`
	// Cut is how many servers' and agents' rows were left out to keep
	// the status within store.MaxReportBytes.
	Cut int `json:"cut,omitempty"`

	// Shown, never reported:
	Self    bool   `json:"-"`
	Damaged string `json:"-"` // why the stored status cannot be shown
	Age     string `json:"-"` // how long ago it reported
}

// Bounds of a reported status: what is read of another replica's, and
// what this one cuts its own to.
const (
	maxRows       = 20000   // servers or agents in one status
	maxFixes      = 8       // fix lines of one server's error
	maxRowText    = 4 << 10 // one error's or fix line's text, reported
	maxNameText   = 256     // a replica's, server's or agent's name
	reportTimeout = 3 * time.Second
)

// reportTTL is how long a replica's status stays after its last report.
func (k *Console) reportTTL() time.Duration { return 5 * k.c.ReportEvery }

// reportLoop reports this replica's status every ReportEvery until the
// console closes; then it removes it, so the others drop it at once.
func (k *Console) reportLoop() {
	defer close(k.reported)
	tick := time.NewTicker(k.c.ReportEvery)
	defer tick.Stop()
	failed := false
	for {
		err := k.reportOnce(k.reportTTL())
		switch {
		case err != nil && !failed:
			k.log.Warn("console: this replica's status cannot be reported to the session store; the other replicas' consoles drop it after its TTL", "ttl", k.reportTTL(), "error", err)
		case err == nil && failed:
			k.log.Info("console: this replica's status is reported to the session store again")
		}
		failed = err != nil
		select {
		case <-k.stop:
			ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
			k.c.Shared.Report(ctx, k.replica(), nil, 0) // best effort: it expires anyway
			cancel()
			return
		case <-tick.C:
		}
	}
}

func (k *Console) reportOnce(ttl time.Duration) error {
	b, err := encodeStatus(k.local())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	return k.c.Shared.Report(ctx, k.replica(), b, ttl)
}

// encodeStatus is st as reported: its text cut to the bounds, and rows
// left out (counted in Cut) until it fits store.MaxReportBytes.
func encodeStatus(st replicaStatus) ([]byte, error) {
	st.Servers = append([]serverRow(nil), st.Servers...)
	for i := range st.Servers {
		r := &st.Servers[i]
		r.Error = cut(r.Error, maxRowText)
		if len(r.Fix) > maxFixes {
			r.Fix = r.Fix[:maxFixes]
		}
		fix := make([]string, len(r.Fix))
		for j, f := range r.Fix {
			fix[j] = cut(f, maxRowText)
		}
		r.Fix = fix
	}
	for {
		b, err := json.Marshal(st)
		if err != nil || len(b) <= store.MaxReportBytes {
			return b, err
		}
		// Over the bound (thousands of servers with long errors): halve
		// the rows, and say how many are not shown.
		ns, na := len(st.Servers)/2, len(st.Agents)/2
		if ns == 0 && na == 0 {
			return nil, fmt.Errorf("this replica's status is %d bytes with no rows, over the session store's %d", len(b), store.MaxReportBytes)
		}
		st.Cut += len(st.Servers) - ns + len(st.Agents) - na
		st.Servers, st.Agents = st.Servers[:ns], st.Agents[:na]
	}
}

// cut is s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + " …"
}

// replicas is each live replica's status: this one's now, first, then
// the others' as they last reported, by name. err says why the store
// could not be read (the others are not shown then).
func (k *Console) replicas(self replicaStatus) ([]replicaStatus, error) {
	self.Self = true
	self.shown()
	out := []replicaStatus{self}
	if k.c.Shared == nil {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	reports, err := k.c.Shared.Reports(ctx)
	if err != nil {
		return out, err
	}
	names := make([]string, 0, len(reports))
	for n := range reports {
		if n != self.Replica {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	now := time.Now()
	// A status unchanged since the last page is not decoded again (at
	// most store.MaxReports are kept: the ones this page read).
	k.decoded.mu.Lock()
	defer k.decoded.mu.Unlock()
	next := make(map[string]decoded, len(names))
	for _, n := range names {
		d, ok := k.decoded.m[n]
		if !ok || !bytes.Equal(d.raw, reports[n]) {
			d = decoded{raw: reports[n], st: decodeStatus(n, reports[n])}
		}
		next[n] = d
		st := d.st
		if !st.At.IsZero() {
			st.Age = max(now.Sub(st.At), 0).Round(time.Second).String() + " ago" // clocks differ
		}
		out = append(out, st)
	}
	k.decoded.m = next
	return out, nil
}

// decoded is another replica's status as last read, and as shown.
type decoded struct {
	raw []byte
	st  replicaStatus
}

type decodedStatuses struct {
	mu sync.Mutex
	m  map[string]decoded
}

// decodeStatus is another replica's status as the overview shows it, or
// a damaged row saying why it cannot be.
func decodeStatus(name string, b []byte) replicaStatus {
	shown := cut(name, maxNameText)
	damaged := func(why string) replicaStatus {
		return replicaStatus{Replica: shown, Damaged: why}
	}
	var st replicaStatus
	if len(b) > store.MaxReportBytes {
		return damaged(fmt.Sprintf("its stored status is over the %d bytes a replica reports; was the session store shared with another program?", store.MaxReportBytes))
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return damaged(fmt.Sprintf("its stored status is not a replica's status (%v); was the session store shared with another program, or is the replica another version of Nexus?", err))
	}
	switch {
	case st.Replica != name:
		return damaged("its stored status names another replica; was the session store shared with another program?")
	case len(st.Servers) > maxRows || len(st.Agents) > maxRows:
		return damaged(fmt.Sprintf("its stored status lists more than %d servers or agents", maxRows))
	}
	st.Replica, st.Store = shown, cut(st.Store, maxNameText)
	for i := range st.Servers {
		r := &st.Servers[i]
		r.Name, r.Status, r.Era, r.Version, r.Transport = cut(r.Name, maxNameText), cut(r.Status, 32), cut(r.Era, 32), cut(r.Version, 32), cut(r.Transport, 32)
		if !knownStatus[r.Status] {
			r.Status = "unknown"
		}
		r.Error = cut(r.Error, maxRowText)
		if len(r.Fix) > maxFixes {
			r.Fix = r.Fix[:maxFixes]
		}
		for j := range r.Fix {
			r.Fix[j] = cut(r.Fix[j], maxRowText)
		}
	}
	for i := range st.Agents {
		st.Agents[i].Agent = cut(st.Agents[i].Agent, maxNameText)
	}
	st.shown()
	return st
}

// shown makes the rows' text inert once, in Go: the overview's
// template shows it as it is (per field, through the template, it was
// most of the page's time with thousands of rows).
func (st *replicaStatus) shown() {
	for i := range st.Servers {
		r := &st.Servers[i]
		r.Name, r.Era, r.Version, r.Transport, r.Error = inert(r.Name), inert(r.Era), inert(r.Version), inert(r.Transport), inert(r.Error)
		if len(r.Fix) > 0 {
			fix := make([]string, len(r.Fix))
			for j, f := range r.Fix {
				fix[j] = inert(f)
			}
			r.Fix = fix
		}
	}
	for i := range st.Agents {
		st.Agents[i].Agent = inert(st.Agents[i].Agent)
	}
}

// knownStatus is a server's statuses, as the overview names them: the
// page's class for a status comes from it, so only these reach it.
var knownStatus = map[string]bool{"connected": true, "failed": true, "disabled": true, "not started": true}
