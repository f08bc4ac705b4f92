package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

const sample = `goos: linux
goarch: amd64
BenchmarkCallToolOverhead/in-process-2   	    5000	     31000 ns/op	         4.9 overhead-µs	       945 overhead-B	  2100 B/op	  30 allocs/op
BenchmarkCallToolOverhead/in-process-2   	    5000	     30000 ns/op	         5.3 overhead-µs	       960 overhead-B	  2100 B/op	  30 allocs/op
BenchmarkCallToolOverhead/stdio-2        	    5000	     90000 ns/op	         2.4 overhead-µs	       936 overhead-B	  2100 B/op	  30 allocs/op
PASS
ok  	github.com/nexus-mcp/nexus/host	3.1s
`

// The figures are the benchmarks' own metrics, as a range over the runs,
// and the table lands between the markers, the rest of the file as it was.
func TestReport(t *testing.T) {
	vals, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(rows, func(r row) bool { return strings.HasPrefix(r.what, "host overhead per `CallTool`") })
	if i < 0 {
		t.Fatal("no host overhead row")
	}
	r := rows[i]
	res := result{row: r, values: vals}
	if got := res.figure(r.metrics[0]); got != "4.9 to 5.3" {
		t.Errorf("in process: %s", got)
	}
	if got := res.figure(r.metrics[2]); got != "2.4" {
		t.Errorf("stdio: %s", got)
	}
	if got := res.figure(metric{unit: "nope", bench: "BenchmarkCallToolOverhead/stdio"}); got != "?" {
		t.Errorf("a missing metric: %s", got)
	}
	tab := table([]result{res}, time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC))
	want := "| host overhead per `CallTool` over a bare session call (`host` BenchmarkCallToolOverhead) | in process, µs **4.9 to 5.3**, B **945 to 960**, over stdio, µs **2.4** | ≤ 10 µs, ≤ 2 KB |"
	if !strings.Contains(tab, want) || !strings.Contains(tab, "on 2026-11-24") {
		t.Errorf("table:\n%s\nwant a line\n%s", tab, want)
	}
	doc := "# T\n\nbefore\n" + begin + "\nold\n" + end + "\nafter\n"
	out, err := splice([]byte(doc), tab)
	if err != nil || !strings.HasPrefix(string(out), "# T\n\nbefore\n"+begin+"\nGenerated") || !strings.HasSuffix(string(out), end+"\nafter\n") || strings.Contains(string(out), "old") {
		t.Errorf("%v\n%s", err, out)
	}
	if _, err := splice([]byte("no markers"), tab); err == nil {
		t.Error("a file without markers was accepted")
	}
	if _, err := parse(strings.NewReader("PASS\n")); err == nil {
		t.Error("output without results was accepted")
	}
}

// The README has the section the report writes.
func TestREADMEHasMarkers(t *testing.T) {
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := splice(b, "x"); err != nil {
		t.Fatal(err)
	}
}
