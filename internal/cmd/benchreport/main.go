package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// row is one line of the table: a benchmark run and the metrics shown.
type row struct {
	what    string
	dir     string // the module: "." or "bench"
	pkg     string
	bench   string // -bench regexp
	time    string // -benchtime
	metrics []metric
	target  string
}

// metric is one figure of a row: a benchmark's metric by its unit, shown
// as the range over the runs, with a label.
type metric struct {
	label string
	bench string // the benchmark's name (without -N); "" takes the row's only one
	unit  string
	digit int // decimals shown
}

var rows = []row{
	{"stdio `tools/call` round trip, Nexus against a raw pipe echo of the same bytes", "bench", ".", "^BenchmarkStdioRatio$", "5000x",
		[]metric{{"vs minimal echo server", "", "nexus-minimal/rawpipe", 2}, {"vs echo on Nexus's server role", "", "nexus/rawpipe", 2}}, "≤ 1.5x"},
	{"the SDK clients against Nexus, interleaved", "bench", ".", "^BenchmarkPeerRatio$", "3000x",
		[]metric{{"call by call: go-sdk / Nexus", "BenchmarkPeerRatio/call-by-call", "go-sdk/nexus", 2}, {"mcp-go / Nexus", "BenchmarkPeerRatio/call-by-call", "mcp-go/nexus", 2},
			{"in blocks of 100: go-sdk / Nexus", "BenchmarkPeerRatio/in-blocks", "go-sdk/nexus", 2}, {"mcp-go / Nexus", "BenchmarkPeerRatio/in-blocks", "mcp-go/nexus", 2}}, "go-sdk ≥ 2x, mcp-go > 1x"},
	{"streamable HTTP `tools/call`, the Nexus client against a plain net/http POST answered with the same bytes, and the SDK clients, interleaved", "bench", ".", "^BenchmarkHTTPRatio$", "5000x",
		[]metric{{"Nexus / POST", "", "nexus/rawpost", 2}, {"go-sdk / Nexus", "", "go-sdk/nexus", 2}, {"mcp-go / Nexus", "", "mcp-go/nexus", 2}}, "≤ 1.5x; peers ≥ 2x"},
	{"the same, the server doing almost nothing (`bench/internal/minimal`) in a process of its own, so the ratios are the clients' own", "bench", ".", "^BenchmarkHTTPClientRatio$", "3000x",
		[]metric{{"call by call: Nexus / POST", "BenchmarkHTTPClientRatio/call-by-call", "nexus/rawpost", 2}, {"go-sdk / Nexus", "BenchmarkHTTPClientRatio/call-by-call", "go-sdk/nexus", 2},
			{"mcp-go / Nexus", "BenchmarkHTTPClientRatio/call-by-call", "mcp-go/nexus", 2},
			{"in blocks of 100: Nexus / POST", "BenchmarkHTTPClientRatio/in-blocks", "nexus/rawpost", 2}, {"go-sdk / Nexus", "BenchmarkHTTPClientRatio/in-blocks", "go-sdk/nexus", 2},
			{"mcp-go / Nexus", "BenchmarkHTTPClientRatio/in-blocks", "mcp-go/nexus", 2}}, "≤ 1.5x; peers ≥ 2x"},
	{"32 concurrent callers on one session vs one", "bench", ".", "^BenchmarkConcurrent32$", "5x", // an op is 4,000 calls
		[]metric{{"speedup", "", "speedup", 1}}, "≥ 3x"},
	{"host overhead per `CallTool` over a bare session call", ".", "./host", "^BenchmarkCallToolOverhead$", "5000x",
		[]metric{{"in process, µs", "BenchmarkCallToolOverhead/in-process", "overhead-µs", 1}, {"B", "BenchmarkCallToolOverhead/in-process", "overhead-B", 0},
			{"over stdio, µs", "BenchmarkCallToolOverhead/stdio", "overhead-µs", 1}}, "≤ 10 µs, ≤ 2 KB"},
	{"gateway: what `nexus serve` adds over stdio", "bench", ".", "^BenchmarkGatewayStdio$", "3000x",
		[]metric{{"call by call: hop µs", "BenchmarkGatewayStdio/call-by-call", "hop-µs", 0}, {"hop / (raw pipe + 5 µs)", "BenchmarkGatewayStdio/call-by-call", "hop/(rawpipe+5µs)", 2},
			{"a line relay's hop µs", "BenchmarkGatewayStdio/call-by-call", "relay-hop-µs", 0}, {"the relay's hop / (raw pipe + 5 µs)", "BenchmarkGatewayStdio/call-by-call", "relay-hop/(rawpipe+5µs)", 2}, {"gateway hop over the relay's µs", "BenchmarkGatewayStdio/call-by-call", "gateway-own-µs", 0},
			{"in blocks of 100: hop / (raw pipe + 5 µs)", "BenchmarkGatewayStdio/in-blocks", "hop/(rawpipe+5µs)", 2}, {"the relay's", "BenchmarkGatewayStdio/in-blocks", "relay-hop/(rawpipe+5µs)", 2}, {"gateway hop over the relay's µs", "BenchmarkGatewayStdio/in-blocks", "gateway-own-µs", 0}}, "≤ 1x"},
	{"gateway over `--listen` HTTP, against a POST to another process", "bench", ".", "^BenchmarkGatewayHTTP$", "3000x",
		[]metric{{"call by call: gateway / (POST + direct)", "BenchmarkGatewayHTTP/call-by-call", "gateway/(post+direct)", 2},
			{"a line relay's / (POST + direct)", "BenchmarkGatewayHTTP/call-by-call", "relay/(post+direct)", 2},
			{"gateway over the relay's µs", "BenchmarkGatewayHTTP/call-by-call", "gateway-own-µs", 0},
			{"in blocks of 100: gateway / (POST + direct)", "BenchmarkGatewayHTTP/in-blocks", "gateway/(post+direct)", 2},
			{"a line relay's", "BenchmarkGatewayHTTP/in-blocks", "relay/(post+direct)", 2},
			{"gateway over the relay's µs", "BenchmarkGatewayHTTP/in-blocks", "gateway-own-µs", 0}}, "≤ 1.5x"},
	{"the same upstream bridged to HTTP by supergateway and mcp-proxy (npm)", "bench", ".", "^BenchmarkBridgeRatio$", "1000x",
		[]metric{{"supergateway / Nexus p50", "", "supergateway/nexus", 1}, {"mcp-proxy / Nexus p50", "", "mcp-proxy/nexus", 1}}, "≥ 5x"},
	{"the same bridges with 64 KB of log text echoed (a line break every 50 bytes)", "bench", ".", "^BenchmarkBridgePayload$", "300x",
		[]metric{{"Nexus p50 µs", "", "nexus-p50-µs", 0}, {"supergateway / Nexus p50", "", "supergateway/nexus", 1}, {"mcp-proxy / Nexus p50", "", "mcp-proxy/nexus", 1}}, "report"},
	{"gateway over stdio with 64 KB of log text echoed", "bench", ".", "^BenchmarkGatewayPayload$", "300x",
		[]metric{{"call by call: hop µs", "BenchmarkGatewayPayload/call-by-call", "hop-µs", 0}, {"a line relay's hop µs", "BenchmarkGatewayPayload/call-by-call", "relay-hop-µs", 0},
			{"gateway hop over the relay's µs", "BenchmarkGatewayPayload/call-by-call", "gateway-own-µs", 0},
			{"in blocks of 100: hop µs", "BenchmarkGatewayPayload/in-blocks", "hop-µs", 0}, {"the relay's", "BenchmarkGatewayPayload/in-blocks", "relay-hop-µs", 0},
			{"gateway hop over the relay's µs", "BenchmarkGatewayPayload/in-blocks", "gateway-own-µs", 0}}, "report"},
	{"audit + metrics + tracing per call", ".", "./host", "^BenchmarkObserved$", "3000x",
		[]metric{{"µs", "", "observed-µs", 1}, {"B", "", "observed-B", 0}, {"no exporter, µs", "", "idle-µs", 1},
			{"audit + metrics without tracing, µs", "", "untraced-µs", 1}, {"B", "", "untraced-B", 0},
			{"tracing alone µs", "", "tracing-µs", 1}, {"B", "", "tracing-B", 0},
			{"the OpenTelemetry SDK's floor for the same number of bare spans, µs", "", "sdk-floor-µs", 1}, {"B", "", "sdk-floor-B", 0}}, "≤ 5 µs, ≤ 1 KB"},
	{"lockfile check of 1,000 tools", ".", "./host", "^BenchmarkLockfileCheck$", "30x",
		[]metric{{"ms", "", "check-ms", 1}}, "≤ 5 ms"},
	{"policy plugin `Decide` round trip", ".", "./internal/plugin", "^BenchmarkPolicyDecide$", "3000x",
		[]metric{{"p50 µs", "", "decide-p50-µs", 0}}, "≤ 60 µs"},
	{"WASM filter call, minimal guest", ".", "./internal/wasm", "^BenchmarkMinimal$", "5000x",
		[]metric{{"p50 ns", "", "p50-ns", 0}}, "< 5 µs"},
	{"a CEL rule, and the Rego allowlist compiled by OPA, in `CallTool`", ".", "./host", "^BenchmarkPolicyLanguages$", "10000x",
		[]metric{{"in process: CEL µs", "BenchmarkPolicyLanguages/in-process", "cel-µs", 1}, {"its CPU µs", "BenchmarkPolicyLanguages/in-process", "cel-cpu-µs", 1},
			{"Rego µs", "BenchmarkPolicyLanguages/in-process", "rego-µs", 1}, {"its CPU µs", "BenchmarkPolicyLanguages/in-process", "rego-cpu-µs", 1},
			{"over stdio: CEL µs", "BenchmarkPolicyLanguages/stdio", "cel-µs", 1}, {"its CPU µs", "BenchmarkPolicyLanguages/stdio", "cel-cpu-µs", 1},
			{"Rego µs", "BenchmarkPolicyLanguages/stdio", "rego-µs", 1}, {"its CPU µs", "BenchmarkPolicyLanguages/stdio", "rego-cpu-µs", 1}},
		"CEL ≤ 2 µs, Rego ≤ 20 µs"},
	{"the filters of the tree in the chain, each against no filter, end to end through `CallTool`", ".", "./host", "^BenchmarkFiltersInChain$", "3000x",
		[]metric{{"raw-ABI guest µs", "BenchmarkFiltersInChain/small", "raw-µs", 1}, {"tool-allowlist µs", "BenchmarkFiltersInChain/small", "allowlist-µs", 1},
			{"deny-destructive µs", "BenchmarkFiltersInChain/small", "destructive-µs", 1}, {"redact-secrets µs", "BenchmarkFiltersInChain/small", "redact-µs", 1},
			{"the four together µs", "BenchmarkFiltersInChain/small", "four-µs", 1},
			{"redact-secrets on 2 KB µs", "BenchmarkFiltersInChain/2KB", "redact-µs", 0}, {"on 64 KB µs", "BenchmarkFiltersInChain/64KB", "redact-µs", 0}},
		"raw ≤ 5 µs, tool-allowlist ≤ 10 µs, deny-destructive ≤ 15 µs, redact-secrets ≤ 100 µs (2 KB) and ≤ 1.5 ms (64 KB), four ≤ the sum"},
	{"`tools/call` payloads through `host.CallTool` over stdio, against a raw pipe moving the same bytes and the SDK clients", "bench", ".", "^BenchmarkPayload$", "100x",
		[]metric{{"64 B: Nexus / raw pipe, minimal echo server", "BenchmarkPayload/64B", "nexus-minimal/rawpipe", 2}, {"2 KB", "BenchmarkPayload/2KB", "nexus-minimal/rawpipe", 2},
			{"64 B, echo on Nexus's server role", "BenchmarkPayload/64B", "nexus/rawpipe", 2}, {"2 KB", "BenchmarkPayload/2KB", "nexus/rawpipe", 2},
			{"the Nexus side's own CPU, MB/s, 64 KB", "BenchmarkPayload/64KB", "nexus-MB/s-cpu", 0}, {"1 MB", "BenchmarkPayload/1MB", "nexus-MB/s-cpu", 0},
			{"against the minimal server, 64 KB", "BenchmarkPayload/64KB", "nexus-minimal-MB/s-cpu", 0}, {"1 MB", "BenchmarkPayload/1MB", "nexus-minimal-MB/s-cpu", 0},
			{"the raw pipe client's own, 64 KB", "BenchmarkPayload/64KB", "rawpipe-MB/s-cpu", 0}, {"1 MB", "BenchmarkPayload/1MB", "rawpipe-MB/s-cpu", 0},
			{"64 KB of log text (a line break every 50 bytes), the Nexus side's", "BenchmarkPayload/64KB-text", "nexus-MB/s-cpu", 0}, {"the raw pipe client's", "BenchmarkPayload/64KB-text", "rawpipe-MB/s-cpu", 0},
			{"go-sdk / Nexus, 64 B", "BenchmarkPayload/64B", "go-sdk/nexus", 2}, {"1 MB", "BenchmarkPayload/1MB", "go-sdk/nexus", 2},
			{"mcp-go / Nexus, 64 B", "BenchmarkPayload/64B", "mcp-go/nexus", 2}, {"1 MB", "BenchmarkPayload/1MB", "mcp-go/nexus", 2}},
		"≤ 1.3x up to 2 KB; ≥ 1000 MB/s at 64 KB and 1 MB; peers ≥ 2x"},
	{"the Rego allowlist, OPA's Go library against Nexus (OPA's WebAssembly)", "bench", ".", "^BenchmarkRegoVsOPA$", "5000x",
		[]metric{{"opa-go / Nexus p50", "", "opa-go/nexus", 2}}, "report"},
	{"`nexus serve` replicas sharing redis-server, each request to the next replica (one 2-core machine)", "bench", ".", "^BenchmarkReplicas$", "2000x",
		[]metric{{"store's added p50 µs", "", "store-added-p50-µs", 0}, {"calls/s, 1 replica / no store", "", "redis-1/memory", 2},
			{"2 replicas", "", "redis-2/memory", 2}, {"3 replicas", "", "redis-3/memory", 2}}, "≤ 100 µs; report"},
	{"a modern (2026-07-28) `tools/call` over loopback HTTP through the gateway against a legacy (2025-11-25) one, two Nexus clients taking turns", ".", "./internal/gateway", "^BenchmarkModernHTTP$", "5000x",
		[]metric{{"legacy p50 µs", "", "legacy-p50-µs", 0}, {"modern p50 µs", "", "modern-p50-µs", 0}, {"modern / legacy", "", "modern/legacy", 2}}, "≤ 1.0x"},
	{"the header/body agreement checks of a modern `tools/call` (checkModern and mcp.CheckParamHeaders on a tool with an x-mcp-header), against the whole POST through the handler in process", ".", "./internal/transport/httpserver", "^BenchmarkHeaderCheck$", "5000x",
		[]metric{{"checks ns", "", "checks-ns", 0}, {"the POST µs", "", "post-µs", 1}, {"checks / POST", "", "checks/post", 3}}, "≤ 1 µs"},
	{"a tools/list served from the client's TTL cache against one fetched from a modern server over an in-memory pipe", ".", "./host/mcp", "^BenchmarkListCache$", "3000x",
		[]metric{{"cached p50 µs", "", "cached-p50-µs", 2}, {"fetched p50 µs", "", "fetched-p50-µs", 0}, {"cached / fetched", "", "cached/fetched", 4}}, "≤ 0.1x"},
	{"a request whose handler asks the other side once before it answers (a tool that elicits or samples), against a plain request, two Peers over an in-memory pipe", ".", "./host/mcp", "^BenchmarkAskRoundTrip$", "5000x",
		[]metric{{"asking µs", "", "ask-us", 0}, {"plain µs", "", "plain-us", 0}, {"asking / plain", "", "ask-x", 2}}, "≤ 3x (two exchanges against one)"},
	{"the Nexus client against the SDK v2 client (`@modelcontextprotocol/client` 2.4.0, node timing its own calls) on a modern-only server in another process, interleaved", "bench", ".", "^BenchmarkModernClientRatio$", "2000x",
		[]metric{{"call by call: Nexus p50 µs", "BenchmarkModernClientRatio/call-by-call", "nexus-p50-µs", 0}, {"SDK v2 / Nexus", "BenchmarkModernClientRatio/call-by-call", "sdk-v2/nexus", 2},
			{"in blocks of 100: Nexus p50 µs", "BenchmarkModernClientRatio/in-blocks", "nexus-p50-µs", 0}, {"SDK v2 / Nexus", "BenchmarkModernClientRatio/in-blocks", "sdk-v2/nexus", 2}}, "≥ 2x"},
	{"the era bridge: an MRTR round (a legacy upstream asks for elicitation mid-call; input_required, then the retry) against the agent's own two plain calls, process CPU, everything in process", ".", "./internal/gateway", "^BenchmarkBridgeRound$", "400x",
		[]metric{{"round CPU µs", "", "cpu-us/round", 0}, {"two calls CPU µs", "", "cpu-us/two-calls", 0}, {"added µs", "", "added-us", 0}, {"round / two calls", "", "x-two-calls", 2}}, "≤ 100 µs added"},
	{"the era bridge: an MRTR round against the agent's own two plain calls, the gateway's CPU alone (`nexus serve` in a process of its own, built with the nexusbench tag, its process CPU clock; `nexus testserver --legacy-only` its stdio upstream); its floor: two plain calls, the second of which the gateway also seals and opens a requestState for and hands across one goroutine more (what any bridge pays on top); beside them, one more upstream exchange (not a floor: a round has none): a plain call and one whose server asks roots/list, which the gateway answers itself; thread sleeps (wake-ups) per op", ".", "./internal/gateway", "^BenchmarkBridgeRoundGateway$", "6000x",
		[]metric{{"round CPU µs", "", "cpu-us/round", 0}, {"two calls CPU µs", "", "cpu-us/two-calls", 0}, {"added µs", "", "added-us", 0}, {"floor µs", "", "floor-us", 0}, {"one more exchange µs", "", "exchange-us", 0}, {"round / two calls", "", "x-two-calls", 2},
			{"sleeps: round", "", "sleeps/round", 1}, {"two calls", "", "sleeps/two-calls", 1}}, "≤ 100 µs added"},
	{"sealing and opening a requestState (AES-256-GCM)", ".", "./internal/gateway", "^BenchmarkState$", "20000x",
		[]metric{{"ns", "", "cpu-ns/seal+open", 0}, {"/ a sha256 of the same bytes", "", "x-sha256", 1}}, "≤ 5 µs"},
	{"10,000 idle per-agent upstream sessions of the era bridge (in-process legacy upstream, its side counted too)", ".", "./internal/gateway", "^BenchmarkBridgeIdleSessions$", "1x",
		[]metric{{"bytes per session", "", "bytes/session", 0}, {"/ a bare client-server pair", "", "x-bare-pair", 2}}, "≤ 64 KB"},
	{"`nexus serve` with its chain against ToolHive's `thv proxy` (v0.47.0), each in front of the same HTTP upstream, the Nexus client interleaved call by call", "bench", ".", "^BenchmarkToolHive$", "2000x",
		[]metric{{"2025-11-25: ToolHive / Nexus p50", "BenchmarkToolHive/legacy", "toolhive/nexus", 2}, {"Nexus hop µs", "BenchmarkToolHive/legacy", "nexus-hop-µs", 0}, {"ToolHive hop µs", "BenchmarkToolHive/legacy", "toolhive-hop-µs", 0},
			{"floor (a relay that only forwards) hop µs", "BenchmarkToolHive/legacy", "relay-hop-µs", 0}, {"ToolHive / floor p50", "BenchmarkToolHive/legacy", "toolhive/relay", 2},
			{"2026-07-28: ToolHive / Nexus p50", "BenchmarkToolHive/modern", "toolhive/nexus", 2}, {"Nexus hop µs", "BenchmarkToolHive/modern", "nexus-hop-µs", 0}, {"ToolHive hop µs", "BenchmarkToolHive/modern", "toolhive-hop-µs", 0},
			{"floor hop µs", "BenchmarkToolHive/modern", "relay-hop-µs", 0}, {"ToolHive / floor p50", "BenchmarkToolHive/modern", "toolhive/relay", 2}}, "≥ 1.5x in both eras"},
}

// buildTags are the build tags a row's benchmark needs, by its -bench
// regexp: the peers that make test (which runs every other benchmark once) does not install
// (make bench-report does) are behind a tag.
var buildTags = map[string]string{"^BenchmarkToolHive$": "toolhive"}

const (
	begin = "<!-- bench-report:begin -->"
	end   = "<!-- bench-report:end -->"
)

func main() {
	readme := flag.String("readme", "README.md", "the file whose bench-report section is rewritten")
	count := flag.Int("count", 3, "runs of each benchmark; the table shows their range")
	only := flag.String("only", "", "run only the rows whose text holds this")
	flag.Parse()
	b, err := os.ReadFile(*readme)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
	var out []result
	for _, r := range rows {
		if *only != "" && !strings.Contains(r.what, *only) {
			// Not run this time: its line stays as the last full run
			// wrote it.
			if line := previous(b, r); line != "" {
				out = append(out, result{row: r, line: line})
			}
			continue
		}
		fmt.Fprintf(os.Stderr, "benchreport: %s (%s %s)\n", r.what, r.pkg, r.bench)
		res, err := run(r, *count)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchreport: %s: %v\n", r.what, err)
			os.Exit(1)
		}
		out = append(out, res)
	}
	next, err := splice(b, table(out, time.Now()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchreport: %s: %v\n", *readme, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*readme, next, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// result is a row with its metrics' values, by benchmark and unit, or
// the line an earlier run wrote for it.
type result struct {
	row
	values map[string]map[string][]float64
	line   string
}

// previous is the line the README's table holds for r, or "".
func previous(doc []byte, r row) string {
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return ""
	}
	prefix := "| " + r.what + " ("
	for _, l := range strings.Split(string(doc[i:j]), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func run(r row, count int) (result, error) {
	args := []string{"test", "-run", "^$", "-bench", r.bench, "-benchtime", r.time, "-count", strconv.Itoa(count), "-benchmem"}
	if t := buildTags[r.bench]; t != "" {
		args = append(args, "-tags", t)
	}
	cmd := exec.Command("go", append(args, r.pkg)...)
	cmd.Dir = r.dir
	if r.dir == "bench" {
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	}
	var stdout bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, os.Stderr)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, err
	}
	vals, err := parse(&stdout)
	if err != nil {
		return result{}, err
	}
	return result{row: r, values: vals}, nil
}

// parse reads `go test -bench` output: per benchmark (its name without the
// -GOMAXPROCS suffix), per unit, every run's value.
func parse(r io.Reader) (map[string]map[string][]float64, error) {
	out := map[string]map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i]
			}
		}
		if out[name] == nil {
			out[name] = map[string][]float64{}
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			out[name][f[i+1]] = append(out[name][f[i+1]], v)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no benchmark results in the output")
	}
	return out, sc.Err()
}

// figure is one metric's cell: the range of its values, or "?" when the
// benchmark did not report it.
func (res result) figure(m metric) string {
	bench := m.bench
	if bench == "" {
		for name := range res.values {
			bench = name
		}
	}
	v := res.values[bench][m.unit]
	if len(v) == 0 {
		return "?"
	}
	lo, hi := slices.Min(v), slices.Max(v)
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', m.digit, 64) }
	if f(lo) == f(hi) {
		return f(lo)
	}
	return f(lo) + " to " + f(hi)
}

// table renders the results as the README's generated table.
func table(res []result, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Generated by `make bench-report` on %s (%s/%s, %d CPUs), each figure the range over its runs:\n\n",
		now.UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("| what | result | target |\n|---|---|---|\n")
	for _, r := range res {
		if r.line != "" {
			b.WriteString(r.line + "\n")
			continue
		}
		var cells []string
		for _, m := range r.metrics {
			cells = append(cells, m.label+" **"+r.figure(m)+"**")
		}
		fmt.Fprintf(&b, "| %s (`%s` %s) | %s | %s |\n", r.what, strings.TrimPrefix(r.pkg, "./"), strings.Trim(r.bench, "^$"), strings.Join(cells, ", "), r.target)
	}
	return b.String()
}

// splice puts body between the markers of doc.
func splice(doc []byte, body string) ([]byte, error) {
	i, j := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if i < 0 || j < i {
		return nil, fmt.Errorf("no %s ... %s section: add the two lines where the table goes", begin, end)
	}
	var out bytes.Buffer
	out.Write(doc[:i+len(begin)])
	out.WriteString("\n" + body)
	out.Write(doc[j:])
	return out.Bytes(), nil
}
