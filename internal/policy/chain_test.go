package policy

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nexus-mcp/nexus/sdk/event"
)

func decide(name string, d event.Decision, err error) Link {
	return Func{N: name, F: func(context.Context, *event.Event) (event.Decision, error) { return d, err }}
}

func ev() *event.Event {
	return &event.Event{ABI: event.ABI, Method: "tools/call", Server: event.Server{Name: "gh"}, Tool: &event.Tool{Name: "delete_repo"},
		Params: json.RawMessage(`{"name":"delete_repo"}`), Result: json.RawMessage(`{"content":[]}`)}
}

func TestRequestChain(t *testing.T) {
	ctx := context.Background()
	modify := decide("mod", event.Decision{Action: event.Modify, Params: json.RawMessage(`{"name":"x"}`)}, nil)
	c := NewChain(Entry{Link: decide("ok", event.Decision{Action: event.Allow}, nil)}, Entry{Link: modify})
	p, err := c.Request(ctx, ev())
	if err != nil || string(p) != `{"name":"x"}` {
		t.Fatal(err, string(p))
	}
	c = NewChain(Entry{Link: decide("no", event.Decision{Action: event.Deny, Reason: "destructive"}, nil)}, Entry{Link: modify})
	_, err = c.Request(ctx, ev())
	var de *DeniedError
	if !errors.As(err, &de) || de.Link != "no" || !strings.Contains(err.Error(), `gh.delete_repo denied by policy "no": destructive`) {
		t.Fatal(err)
	}
}

func TestFailClosedAndOnError(t *testing.T) {
	ctx := context.Background()
	broken := decide("broken", event.Decision{}, errors.New("trap"))
	_, err := NewChain(Entry{Link: broken}).Request(ctx, ev())
	var de *DeniedError
	if !errors.As(err, &de) || de.Err == nil {
		t.Fatalf("policy error must deny: %v", err)
	}
	if _, err := NewChain(Entry{Link: broken, OnError: OnErrorAllow}).Request(ctx, ev()); err != nil {
		t.Fatal(err)
	}
	_, err = NewChain(Entry{Link: broken, Kind: KindSanitizer}).Response(ctx, ev())
	var we *WithheldError
	if !errors.As(err, &we) {
		t.Fatalf("sanitizer error must withhold: %v", err)
	}
	if r, err := NewChain(Entry{Link: broken, Kind: KindSanitizer, OnError: OnErrorPass}).Response(ctx, ev()); err != nil || string(r) != `{"content":[]}` {
		t.Fatal(err)
	}
	bad := decide("bad", event.Decision{Action: "perhaps"}, nil)
	if _, err := NewChain(Entry{Link: bad}).Request(ctx, ev()); !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("unknown action: %v", err)
	}
	badJSON := decide("badjson", event.Decision{Action: event.Modify, Params: json.RawMessage(`{nope`)}, nil)
	if _, err := NewChain(Entry{Link: badJSON}).Request(ctx, ev()); !errors.Is(err, ErrInvalidDecision) {
		t.Fatalf("invalid JSON: %v", err)
	}
}

func TestMatch(t *testing.T) {
	ctx := context.Background()
	deny := decide("d", event.Decision{Action: event.Deny}, nil)
	c := NewChain(Entry{Link: deny, Match: []Match{{Servers: []string{"other"}}, {Tools: []string{"read_*"}}}})
	if _, err := c.Request(ctx, ev()); err != nil {
		t.Fatalf("unmatched link ran: %v", err)
	}
	c = NewChain(Entry{Link: deny, Match: []Match{{Servers: []string{"g*"}, Methods: []string{"tools/*"}}}})
	if _, err := c.Request(ctx, ev()); err == nil {
		t.Fatal("matched link did not run")
	}
	// Sanitizers do not run on requests, policies not on responses.
	c = NewChain(Entry{Link: deny, Kind: KindSanitizer})
	if _, err := c.Request(ctx, ev()); err != nil {
		t.Fatal(err)
	}
	var nilChain *Chain
	if p, err := nilChain.Request(ctx, ev()); err != nil || p == nil {
		t.Fatal(err)
	}
}

// List gathers the flags of every link that decided, from allow and deny
// decisions alike, and a denial carries its link's flags; a link's flags
// are kept to maxFlags of maxFlagText bytes.
func TestListFlags(t *testing.T) {
	ctx := context.Background()
	many := make([]string, 40)
	for i := range many {
		many[i] = strings.Repeat("x", maxFlagText+10)
	}
	c := NewChain(
		Entry{Link: decide("warns", event.Decision{Action: event.Allow, Flags: []string{"ansi: ESC in description"}}, nil)},
		Entry{Link: decide("floods", event.Decision{Action: event.Allow, Flags: many}, nil)},
		Entry{Link: decide("withholds", event.Decision{Action: event.Deny, Reason: "hidden: poisoned", Flags: []string{"tags: <IMPORTANT> in description"}}, nil)},
		Entry{Link: decide("never", event.Decision{Action: event.Allow, Flags: []string{"not reached"}}, nil)},
	)
	flags, err := c.List(ctx, ev(), nil)
	var de *DeniedError
	if !errors.As(err, &de) || de.Link != "withholds" || len(de.Flags) != 1 || de.Flags[0] != "tags: <IMPORTANT> in description" {
		t.Fatalf("%+v", err)
	}
	if len(flags) != 1+maxFlags+1+1 || flags[0] != (Flag{"warns", "ansi: ESC in description"}) ||
		len(flags[1].Text) != maxFlagText+3 || flags[maxFlags+1].Text != "(and 24 more)" || flags[len(flags)-1].Link != "withholds" {
		t.Fatalf("%d flags: %v", len(flags), flags[len(flags)-1])
	}
	// Request ignores flags; a chain that allows lists with none.
	if _, err := NewChain(Entry{Link: decide("ok", event.Decision{Action: event.Allow}, nil)}).List(ctx, ev(), nil); err != nil {
		t.Fatal(err)
	}
}

// A deny whose findings a person accepted for this definition (the
// lockfile's accepted flags) counts as a warning, and the links after it
// still decide; a finding not accepted still withholds (issue 42).
func TestListAccepted(t *testing.T) {
	ctx := context.Background()
	flagged := decide("scan", event.Decision{Action: event.Deny, Reason: "hidden", Flags: []string{"tags: <IMPORTANT> tag in description"}}, nil)
	accept := func(want ...string) func(string, []string) bool {
		return func(link string, flags []string) bool {
			for _, f := range flags {
				if !slices.Contains(want, link+": "+f) {
					return false
				}
			}
			return true
		}
	}
	all := accept("scan: tags: <IMPORTANT> tag in description")
	if flags, err := NewChain(Entry{Link: flagged}).List(ctx, ev(), all); err != nil || len(flags) != 1 {
		t.Fatalf("accepted findings: %v %v", flags, err)
	}
	// The allowlist after the scan still runs.
	_, err := NewChain(Entry{Link: flagged}, Entry{Link: decide("allowlist", event.Decision{Action: event.Deny, Reason: "not listed"}, nil)}).List(ctx, ev(), all)
	var de *DeniedError
	if !errors.As(err, &de) || de.Link != "allowlist" {
		t.Fatalf("the link after an accepted one: %v", err)
	}
	// Another finding, or another link's, is not accepted.
	if _, err := NewChain(Entry{Link: flagged}).List(ctx, ev(), accept("other: tags: <IMPORTANT> tag in description")); !errors.As(err, &de) || de.Link != "scan" {
		t.Fatalf("a finding accepted for another link: %v", err)
	}
}

// A shadow link's deny and modify are recorded, as would-deny and
// would-modify, and not enforced; its failure stops nothing. A trace
// records every link that ran, with its source and time; without a trace
// nothing is measured.
func TestShadowAndTrace(t *testing.T) {
	tr := &Trace{}
	ctx := WithTrace(context.Background(), tr)
	c := NewChain(
		Entry{Link: decide("new-rule", event.Decision{Action: event.Deny, Reason: "would be refused"}, nil), Shadow: true, Source: "nexus.hcl:12"},
		Entry{Link: decide("rewrite", event.Decision{Action: event.Modify, Params: json.RawMessage(`{"name":"x"}`)}, nil), Shadow: true},
		Entry{Link: decide("flaky", event.Decision{}, errors.New("trap")), Shadow: true},
		Entry{Link: decide("ok", event.Decision{Action: event.Allow}, nil), Source: "nexus.hcl:30"},
	)
	p, err := c.Request(ctx, ev())
	if err != nil || string(p) != `{"name":"delete_repo"}` {
		t.Fatalf("a shadow chain enforced something: %s %v", p, err)
	}
	steps := tr.Steps()
	var got []string
	for _, s := range steps {
		got = append(got, s.Link+" "+s.Action+" "+s.Source+" "+s.Method)
	}
	want := "new-rule would-deny nexus.hcl:12 tools/call|rewrite would-modify  tools/call|flaky error  tools/call|ok allow nexus.hcl:30 tools/call"
	if strings.Join(got, "|") != want {
		t.Errorf("steps %q\nwant %q", strings.Join(got, "|"), want)
	}
	if steps[0].Reason != "would be refused" || steps[2].Reason != "trap" {
		t.Errorf("reasons: %+v", steps)
	}
	// Enforced, the same deny stops the request, and is the last step.
	tr = &Trace{}
	ctx = WithTrace(context.Background(), tr)
	c = NewChain(Entry{Link: decide("rule", event.Decision{Action: event.Deny, Reason: "no"}, nil)}, Entry{Link: decide("never", event.Decision{Action: event.Allow}, nil)})
	if _, err := c.Request(ctx, ev()); err == nil {
		t.Fatal("an enforced deny let the request through")
	}
	if s := tr.Steps(); len(s) != 1 || s[0].Action != event.Deny {
		t.Errorf("steps %+v", s)
	}
	// A sanitizer in shadow mode leaves the result as it was.
	tr = &Trace{}
	ctx = WithTrace(context.Background(), tr)
	c = NewChain(Entry{Kind: KindSanitizer, Link: decide("redact", event.Decision{Action: event.Modify, Result: json.RawMessage(`{"content":["x"]}`)}, nil), Shadow: true})
	if r, err := c.Response(ctx, ev()); err != nil || string(r) != `{"content":[]}` {
		t.Errorf("a shadow sanitizer changed the result: %s %v", r, err)
	}
	if s := tr.Steps(); len(s) != 1 || s[0].Action != ActionWouldModify || s[0].Kind != KindSanitizer {
		t.Errorf("steps %+v", s)
	}
}

// A released trace records nothing more, and its buffer, now another
// request's, sees none of the late steps; a second Release does not lock
// out the buffer's new owner.
func TestTraceRelease(t *testing.T) {
	t1 := NewTrace()
	t1.Add(Step{Link: "permission"})
	if s := t1.Since(0); len(s) != 1 || s[0].Link != "permission" {
		t.Fatalf("steps %+v", s)
	}
	b := t1.buf.Load()
	t1.Release()
	// The next owner of the same buffer, as NewTrace makes it.
	t2 := &Trace{gen: b.gen}
	t2.buf.Store(b)
	if t2.Len() != 0 {
		t.Errorf("the buffer came back with %d steps", t2.Len())
	}
	t1.Add(Step{Link: "late-filter"})
	t1.Release()
	t2.Add(Step{Link: "schema"})
	if s := t2.Steps(); len(s) != 1 || s[0].Link != "schema" {
		t.Errorf("the new owner's steps: %+v", s)
	}
	if t1.Len() != 0 || t1.Steps() != nil || t1.Since(0) != nil {
		t.Error("a released trace still shows steps")
	}

	// Late steps racing with the release and the next owner.
	for range 20 {
		tr := NewTrace()
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					tr.Add(Step{Link: "late"})
				}
			}()
		}
		tr.Release()
		next := NewTrace()
		next.Add(Step{Link: "own"})
		wg.Wait()
		for _, s := range next.Steps() {
			if s.Link != "own" {
				t.Fatalf("a released trace's step reached the next owner: %+v", next.Steps())
			}
		}
		next.Release()
	}
}
