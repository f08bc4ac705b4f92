package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// The stream sends only what its filter matches: a decision that does
// not match, published first, never arrives before the one that does.
func TestStreamFilter(t *testing.T) {
	k, feed, base := fakeConsole(t, &fakeServers{}, &fakeSessions{})
	cookie := loginCookie(t, k)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/decisions/stream?agent=claude&verdict=deny&link=rules&server=gh", nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %v %v", err, resp)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Scan() // the retry line: the stream is subscribed once it is sent
	rec := func(agent, server, verdict, link, tool string) {
		feed.Publish(audit.Decision{Record: audit.Record{Time: time.Now(), Agent: agent, Server: server, Method: "tools/call", Tool: tool, Decision: verdict, Link: link, Source: "nexus.hcl:7"}, Latency: 1500 * time.Microsecond})
	}
	rec("other", "gh", "deny", "rules", "a")
	rec("claude", "fs", "deny", "rules", "b")
	rec("claude", "gh", "allow", "", "c")
	rec("claude", "gh", "deny", "lock", "d")
	rec("claude", "gh", "deny", "rules", "match")
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Name, Agent, Verdict, Link, Source string
			MS                                 float64
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		if e.Name != "mcp_gh_match" || e.Source != "nexus.hcl:7" || e.MS != 1.5 {
			t.Fatalf("first event: %s", data)
		}
		return
	}
	t.Fatalf("the stream ended: %v", sc.Err())
}
