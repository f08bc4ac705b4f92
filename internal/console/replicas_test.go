package console_test

import (
	"context"
	"html"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/nexus-mcp/nexus/internal/console"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
	"github.com/nexus-mcp/nexus/internal/testenv"
)

var (
	replicaRow = regexp.MustCompile(`(?s)<tr class="replica">(.*?)</tr>`)
	tag        = regexp.MustCompile(`<[^>]*>`)
)

// replicaRows is the overview's replicas table, a row's text each.
func replicaRows(page string) []string {
	var out []string
	for _, m := range replicaRow.FindAllStringSubmatch(page, -1) {
		out = append(out, strings.Join(strings.Fields(html.UnescapeString(tag.ReplaceAllString(m[1], " "))), " "))
	}
	return out
}

// storeConsole is a console over fakes that reports, as replica name,
// to the store at url every 200 ms (its status lives 1 s after its
// last report).
func storeConsole(t *testing.T, url, name string, srv *fakeServers, ss *fakeSessions) (*console.Console, string) {
	t.Helper()
	st, err := store.NewRedis(store.RedisOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	k, err := console.New(console.Config{Options: console.Options{Listen: "127.0.0.1:0", Tokens: []string{adminToken}},
		Servers: srv, Sessions: ss, Replica: name, Store: "redis://test", Shared: st, ReportEvery: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(k)
	t.Cleanup(func() { ts.Close(); k.Close(); st.Close() })
	return k, ts.URL
}

// waitRows reads the overview at base until its replicas are want (a
// row starting with each, in order), within a generous bound.
func waitRows(t *testing.T, base, cookie, what string, want ...string) (rows []string, page string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, page = get(t, base+"/", cookie)
		rows = replicaRows(page)
		ok := len(rows) == len(want)
		for i := 0; ok && i < len(want); i++ {
			ok = strings.HasPrefix(rows[i], want[i])
		}
		if ok {
			return rows, page
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the replicas shown are %q, want rows starting %q", what, rows, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestReplicaRows: two consoles share a real Redis; each shows both
// replicas, itself first (its servers and agents now) and the other as
// it last reported. A replica that stops cleanly drops off at once; one
// that stops reporting (it died) drops off after its TTL. What another
// program wrote in the store's place for a replica is shown as damaged,
// inert, and the page still renders.
func TestReplicaRows(t *testing.T) {
	url := testenv.RedisServer(t)
	a, baseA := storeConsole(t, url, "replica-a", &fakeServers{list: servers(3)}, &fakeSessions{list: sessions(4)})
	b, baseB := storeConsole(t, url, "replica-b", &fakeServers{list: servers(5)}, &fakeSessions{list: sessions(7)})
	cookieA, cookieB := loginCookie(t, a), loginCookie(t, b)

	rows, page := waitRows(t, baseA, cookieA, "replica a's overview", "replica-a (this one)", "replica-b")
	if rows[0] != "replica-a (this one) redis://test 4 3 now" || !strings.HasPrefix(rows[1], "replica-b redis://test 7 5 ") {
		t.Errorf("replica a's rows: %q", rows)
	}
	waitRows(t, baseB, cookieB, "replica b's overview", "replica-b (this one)", "replica-a")
	// b's servers and agents, as b reported them, in b's section.
	sec := page[strings.Index(page, `<h2 id="replica-1">`):]
	for _, want := range []string{"Replica replica-b", "server0004", "agent06", "MCP Server Launch Failed"} {
		if !strings.Contains(sec, want) {
			t.Errorf("replica b's section lacks %q", want)
		}
	}

	// Damaged records: not JSON, markup and escapes, another replica's
	// name, and one over the size bound written past the store's check.
	st, err := store.NewRedis(store.RedisOptions{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for name, val := range map[string]string{
		"junk":                      "\x00\xffnot json",
		"<script>alert(1)</script>": `{"replica":"<script>alert(1)</script>","servers":[{"name":"s","status":"\u001b[31m\"><b>x"}]}`,
		"liar":                      `{"replica":"replica-a"}`,
	} {
		if err := st.Report(ctx, name, []byte(val), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Report(ctx, "huge", []byte("{}"), time.Minute); err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(mustParse(t, url))
	defer raw.Close()
	if err := raw.Set(ctx, "nexus:report:huge", strings.Repeat("x", store.MaxReportBytes+10), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, page = get(t, baseA+"/", cookieA)
	rows = replicaRows(page)
	joined := strings.Join(rows, "\n")
	for _, want := range []string{
		"huge Damaged: its stored status is over the",
		"junk Damaged: its stored status is not a replica's status",
		"liar Damaged: its stored status names another replica",
		"<script>alert(1)</script> 0 1", // shown as text, its server's status not trusted
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the rows lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>x") || strings.Contains(page, "\x1b") {
		t.Error("a stored status's markup or escapes reached the page")
	}
	if !strings.Contains(page, `class="st-unknown"`) {
		t.Error("a stored server status outside the known ones is not shown as unknown")
	}
	for _, n := range []string{"junk", "<script>alert(1)</script>", "liar", "huge"} {
		st.Report(ctx, n, nil, 0)
	}

	// A replica that stops cleanly drops off at once.
	b.Close()
	waitRows(t, baseA, cookieA, "replica b closed", "replica-a (this one)")

	// One that dies drops off when its status expires.
	if err := st.Report(ctx, "replica-c", []byte(`{"replica":"replica-c","sessions":1}`), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	waitRows(t, baseA, cookieA, "replica c alive", "replica-a (this one)", "replica-c")
	waitRows(t, baseA, cookieA, "replica c expired", "replica-a (this one)")
}

func mustParse(t *testing.T, url string) *redis.Options {
	o, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
