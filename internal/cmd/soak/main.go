//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	var o options
	flag.StringVar(&o.nexus, "nexus", "bin/nexus", "the nexus binary")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the load runs")
	flag.IntVar(&o.sessions, "sessions", 10000, "sessions to open in all (the run ends early once they are done)")
	flag.IntVar(&o.replicas, "replicas", 2, "nexus serve replicas")
	flag.IntVar(&o.flood, "flood", 48, "alice's concurrent workers (bob and carol have 4 each)")
	flag.BoolVar(&o.faults, "faults", true, "kill the upstream, Redis and a replica during the run")
	flag.StringVar(&o.readme, "readme", "", "write the result table into this README between the soak markers")
	flag.StringVar(&o.dir, "dir", "", "working directory (default: a new temporary one, removed at the end)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o, os.Stderr)
	if rep != nil {
		table := rep.markdown()
		fmt.Print(table)
		if o.readme != "" && err == nil {
			if werr := writeReadme(o.readme, table); werr != nil {
				fmt.Fprintln(os.Stderr, "soak:", werr)
				os.Exit(1)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAILED:", err)
		os.Exit(1)
	}
}

type options struct {
	nexus    string
	duration time.Duration
	sessions int
	replicas int
	flood    int
	faults   bool
	readme   string
	dir      string
}

var agents = []string{"alice", "bob", "carol"}

// run starts Redis and the replicas, drives the load, injects the faults
// and checks what the gateway kept. The report is returned even when a
// check failed, so the caller can print it.
func run(ctx context.Context, o options, log io.Writer) (*report, error) {
	nexus, err := filepath.Abs(o.nexus)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(nexus); err != nil {
		return nil, fmt.Errorf("the nexus binary: %w (run make build first)", err)
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "nexus-soak-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	procs := &procSet{}
	defer procs.stopAll()

	redis, err := startRedis(procs, dir, 0)
	if err != nil {
		return nil, err
	}
	reps := make([]*replica, o.replicas)
	for i := range reps {
		reps[i] = &replica{n: i, nexus: nexus, dir: dir, store: "redis://" + redis.addr + "/0"}
		if err := reps[i].start(procs); err != nil {
			return nil, err
		}
	}
	rep := &report{opts: o, perAgent: map[string]*agentStats{}}
	for _, a := range agents {
		rep.perAgent[a] = &agentStats{}
	}
	for _, r := range reps {
		m, err := r.metrics()
		if err != nil {
			return rep, err
		}
		rep.startGoroutines = append(rep.startGoroutines, m["go_goroutines"])
	}

	urls := make([]string, len(reps))
	for i, r := range reps {
		urls[i] = r.url
	}
	load := &loader{urls: urls, rep: rep, limit: int64(o.sessions), span: o.duration, hc: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
	}}
	lctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, a := range agents {
		n := 4
		if a == "alice" {
			n = o.flood
		}
		for range n {
			wg.Go(func() { load.worker(lctx, a, a == "alice") })
		}
	}
	// Resident memory over time, every replica, every tenth of the run.
	wg.Go(func() {
		t := time.NewTicker(max(o.duration/10, time.Second))
		defer t.Stop()
		for {
			var rss []int64
			for _, r := range reps {
				rss = append(rss, r.rss())
			}
			rep.addRSS(time.Since(rep.start()), rss)
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
		}
	})
	if o.faults {
		wg.Go(func() { injectFaults(lctx, o.duration, procs, redis, reps, rep, log) })
	}
	fmt.Fprintf(log, "soak: %d replicas, %v, up to %d sessions, alice with %d workers\n", o.replicas, o.duration, o.sessions, o.flood)
	wg.Wait()
	rep.elapsed = time.Since(rep.start())
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}

	// Quiet: the end-state figures, once the idle connections are gone.
	load.hc.CloseIdleConnections()
	time.Sleep(2 * time.Second)
	for _, r := range reps {
		m, err := r.metrics()
		if err != nil {
			return rep, fmt.Errorf("replica %d at the end: %w", r.n, err)
		}
		rep.end = append(rep.end, endState{goroutines: m["go_goroutines"], fds: m["process_open_fds"], rss: m["process_resident_memory_bytes"], sessions: m["nexus_downstream_sessions"]})
	}
	// Stop the replicas (SIGTERM: they flush their audit logs) and read them.
	for _, r := range reps {
		r.stop()
	}
	if err := rep.checkAudit(dir); err != nil {
		return rep, err
	}
	return rep, rep.verdict()
}

// procSet is every process the soak started, ended by PID at the end.
type procSet struct {
	mu    sync.Mutex
	cmds  []*exec.Cmd
	waits map[*exec.Cmd]chan struct{}
}

func (p *procSet) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	p.mu.Lock()
	if p.waits == nil {
		p.waits = map[*exec.Cmd]chan struct{}{}
	}
	p.cmds = append(p.cmds, cmd)
	p.waits[cmd] = done
	p.mu.Unlock()
	return nil
}

// kill sends sig to cmd's process and waits (at most 15 s) for it to end.
func (p *procSet) kill(cmd *exec.Cmd, sig syscall.Signal) {
	p.mu.Lock()
	done := p.waits[cmd]
	p.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

func (p *procSet) stopAll() {
	p.mu.Lock()
	cmds := slices.Clone(p.cmds)
	p.mu.Unlock()
	for _, c := range cmds {
		p.kill(c, syscall.SIGKILL)
		// The replicas' upstream servers are in their process groups.
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	}
}

type redisProc struct {
	cmd  *exec.Cmd
	addr string
}

// startRedis starts a redis-server on loopback, on port (0: a free one).
func startRedis(p *procSet, dir string, port int) (*redisProc, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if bin, err = exec.LookPath("valkey-server"); err != nil {
			return nil, errors.New("redis-server is not installed: run make testdeps (apt-get install -y redis-server)")
		}
	}
	if port == 0 {
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no", "--dir", dir)
	if err := p.start(cmd); err != nil {
		return nil, err
	}
	r := &redisProc{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	if err := waitDial(r.addr, 30*time.Second); err != nil {
		return nil, fmt.Errorf("redis-server: %w", err)
	}
	return r, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitDial(addr string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen within %v: %w", addr, within, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replica is one `nexus serve`, started again on the same ports after it
// is killed; each start writes an audit log of its own (a log ends torn
// when its writer is killed in the middle of a line).
type replica struct {
	n            int
	nexus, dir   string
	store        string
	port, mport  int
	url, metrURL string
	starts       int
	procs        *procSet

	mu  sync.Mutex // the fault injector restarts it while the sampler reads it
	cmd *exec.Cmd
}

func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd.Process.Pid
}

const configText = `
server "testserver" {
  stdio {
    command = %q
    args    = ["testserver"]
  }
}
agent "alice" {
  permission = "yolo"
  tokens     = ["alice-soak-token"]
}
agent "bob" {
  permission = "yolo"
  tokens     = ["bob-soak-token"]
}
agent "carol" {
  permission = "yolo"
  tokens     = ["carol-soak-token"]
}
audit {
  path              = %q
  include_arguments = true
  fail_closed       = true
}
gateway {
  limits {
    max_sessions = 1000
    max_requests = 256
  }
}
`

func (r *replica) start(p *procSet) error {
	r.procs = p
	var err error
	if r.port == 0 {
		if r.port, err = freePort(); err != nil {
			return err
		}
		if r.mport, err = freePort(); err != nil {
			return err
		}
	}
	r.starts++
	cfg := filepath.Join(r.dir, fmt.Sprintf("replica%d-%d.hcl", r.n, r.starts))
	auditPath := filepath.Join(r.dir, fmt.Sprintf("audit-replica%d-%d.jsonl", r.n, r.starts))
	if err := os.WriteFile(cfg, fmt.Appendf(nil, configText, r.nexus, auditPath), 0o600); err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port))
	maddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.mport))
	r.url, r.metrURL = "http://"+addr+"/mcp", "http://"+maddr+"/metrics"
	logf, err := os.Create(filepath.Join(r.dir, fmt.Sprintf("replica%d-%d.log", r.n, r.starts)))
	if err != nil {
		return err
	}
	cmd := exec.Command(r.nexus, "serve", "--config", cfg, "--listen", addr, "--metrics", maddr, "--session-store", r.store)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(r.nexus)+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := p.start(cmd); err != nil {
		logf.Close()
		return err
	}
	r.mu.Lock()
	r.cmd = cmd
	r.mu.Unlock()
	if err := waitDial(addr, 60*time.Second); err != nil {
		return fmt.Errorf("replica %d (log %s): %w", r.n, logf.Name(), err)
	}
	return waitDial(maddr, 10*time.Second)
}

func (r *replica) stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	r.procs.kill(cmd, syscall.SIGTERM)
}

// children are the processes whose parent is the replica: its upstream
// servers.
func (r *replica) children() []int {
	ents, _ := os.ReadDir("/proc")
	parent := strconv.Itoa(r.pid())
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == parent {
			out = append(out, pid)
		}
	}
	return out
}

// rss is the replica's resident memory in bytes, 0 when it is not running.
func (r *replica) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.pid()))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// metrics reads the replica's Prometheus figures that have no labels.
func (r *replica) metrics() (map[string]float64, error) {
	resp, err := http.Get(r.metrURL)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 8<<20))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	for _, want := range []string{"go_goroutines", "process_open_fds"} {
		if _, ok := out[want]; !ok {
			return nil, fmt.Errorf("%s has no %s", r.metrURL, want)
		}
	}
	return out, sc.Err()
}

func injectFaults(ctx context.Context, d time.Duration, p *procSet, redis *redisProc, reps []*replica, rep *report, log io.Writer) {
	wait := func(frac float64) bool {
		at := rep.start().Add(time.Duration(float64(d) * frac))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Until(at)):
			return true
		}
	}
	note := func(format string, args ...any) {
		s := fmt.Sprintf("%5.0fs  ", time.Since(rep.start()).Seconds()) + fmt.Sprintf(format, args...)
		fmt.Fprintln(log, "soak: fault:", s)
		rep.mu.Lock()
		rep.faults = append(rep.faults, s)
		rep.mu.Unlock()
	}
	if !wait(0.25) {
		return
	}
	kids := reps[0].children()
	for _, pid := range kids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	note("upstream server killed (SIGKILL) under replica 0: %d process(es)", len(kids))

	if !wait(0.45) {
		return
	}
	p.kill(redis.cmd, syscall.SIGKILL)
	note("Redis killed (SIGKILL)")
	time.Sleep(3 * time.Second)
	_, port, _ := net.SplitHostPort(redis.addr)
	n, _ := strconv.Atoi(port)
	if r, err := startRedis(p, filepath.Dir(reps[0].dir+"/x"), n); err != nil {
		note("Redis did not start again: %v", err)
	} else {
		*redis = *r
		note("Redis started again (empty)")
	}

	if !wait(0.65) || len(reps) < 2 {
		return
	}
	last := reps[len(reps)-1]
	last.mu.Lock()
	cmd := last.cmd
	last.mu.Unlock()
	p.kill(cmd, syscall.SIGKILL)
	note("replica %d killed (SIGKILL)", last.n)
	time.Sleep(2 * time.Second)
	if err := last.start(p); err != nil {
		note("replica %d did not start again: %v", last.n, err)
	} else {
		note("replica %d started again", last.n)
	}
}

// loader opens sessions and makes calls until its context ends or the
// sessions are used up.
type loader struct {
	urls   []string
	hc     *http.Client
	rep    *report
	limit  int64
	span   time.Duration // the sessions are spread over it
	opened atomic.Int64
	next   atomic.Uint64
	seq    atomic.Uint64
}

func (l *loader) url() string { return l.urls[int(l.next.Add(1))%len(l.urls)] }

func (l *loader) worker(ctx context.Context, agent string, flood bool) {
	st := l.rep.perAgent[agent]
	for ctx.Err() == nil {
		n := l.opened.Add(1)
		if n > l.limit {
			return
		}
		// Sessions are spread over the run, so the faults land under load
		// (the n-th opens no sooner than n/limit of the way through).
		sleep(ctx, time.Until(l.rep.start().Add(time.Duration(float64(l.span)*float64(n-1)/float64(l.limit)))))
		s := &session{l: l, agent: agent, token: agent + "-soak-token"}
		if !s.open(ctx, st) {
			if s.id != "" {
				s.close() // initialized, but the notification failed
			}
			// Refused or failed: back off a little rather than spin.
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		st.sessions.Add(1)
		calls := 2 + rand.IntN(4)
		for range calls {
			if ctx.Err() != nil {
				break
			}
			s.call(ctx, st, flood)
		}
		s.close()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

type session struct {
	l     *loader
	agent string
	token string
	id    string
	n     int
}

// answer is what one POST brought back.
type answer struct {
	status int
	body   string // the HTTP error body, for refusals
	msg    map[string]json.RawMessage
}

func (s *session) post(ctx context.Context, method string, params any, notify bool) (answer, error) {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	s.n++
	id := s.n
	if !notify {
		m["id"] = id
	}
	body, _ := json.Marshal(m)
	req, err := http.NewRequestWithContext(ctx, "POST", s.l.url(), bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	resp, err := s.l.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	if method == "initialize" {
		s.id = resp.Header.Get("Mcp-Session-Id")
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		a.body = string(b)
		return a, nil
	}
	if notify {
		return a, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		a.msg, err = readSSE(resp.Body, id)
	} else {
		err = json.NewDecoder(io.LimitReader(resp.Body, 32<<20)).Decode(&a.msg)
	}
	return a, err
}

// readSSE reads events until the message answering id.
func readSSE(r io.Reader, id int) (map[string]json.RawMessage, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var data bytes.Buffer
	want := strconv.Itoa(id)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("the stream ended before the answer: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data.Write(bytes.TrimPrefix(v, []byte(" ")))
			data.WriteByte('\n')
			continue
		}
		if len(line) > 0 || data.Len() == 0 {
			continue
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(data.Bytes(), &m) == nil && string(m["id"]) == want {
			return m, nil
		}
		data.Reset()
	}
}

func (s *session) open(ctx context.Context, st *agentStats) bool {
	a, err := s.post(ctx, "initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "soak-" + s.agent, "version": "1"}}, false)
	if !st.judge(a, err) || s.id == "" {
		return false
	}
	a, err = s.post(ctx, "notifications/initialized", nil, true)
	return err == nil && a.status == http.StatusAccepted
}

func (s *session) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "DELETE", s.l.url(), nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Mcp-Session-Id", s.id)
	if resp, err := s.l.hc.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// call makes one tools/call: mostly small echoes (their latency is what
// the table shows), some 64 KB ones, some adds, and slow calls that the
// client gives up on (alice makes more of those).
func (s *session) call(ctx context.Context, st *agentStats, flood bool) {
	p := rand.Float64()
	slow := 0.05
	if flood {
		slow = 0.4
	}
	switch {
	case p < slow:
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		a, err := s.post(cctx, "tools/call", map[string]any{"name": "mcp_testserver_slow_operation",
			"arguments": map[string]any{"duration": 2, "steps": 4}}, false)
		if err != nil && cctx.Err() != nil && ctx.Err() == nil {
			st.abandoned.Add(1)
			return
		}
		st.called(a, err)
	case p < slow+0.1:
		a, err := s.post(ctx, "tools/call", map[string]any{"name": "mcp_testserver_add", "arguments": map[string]any{"a": 2, "b": 3}}, false)
		st.called(a, err)
	default:
		marker := fmt.Sprintf("soak-%s-%d", s.agent, s.l.seq.Add(1))
		msg := marker
		big := rand.Float64() < 0.1
		if big {
			msg += " " + strings.Repeat("x", 64<<10)
		}
		t0 := time.Now()
		a, err := s.post(ctx, "tools/call", map[string]any{"name": "mcp_testserver_echo", "arguments": map[string]any{"message": msg}}, false)
		el := time.Since(t0)
		if st.called(a, err) {
			st.answered(marker)
			if !big {
				st.latency(el)
			}
		}
	}
}

// agentStats is what one agent's clients saw.
type agentStats struct {
	sessions  atomic.Int64
	ok        atomic.Int64 // requests answered with a result or a JSON-RPC error
	limited   atomic.Int64 // 503 or 429 naming a limit
	refused   atomic.Int64 // other HTTP refusals (store down, session gone)
	failed    atomic.Int64 // transport errors (a replica killed, a stream cut)
	abandoned atomic.Int64 // slow calls the client gave up on
	calls     atomic.Int64 // tools/call requests answered

	mu      sync.Mutex
	lat     []time.Duration
	markers []string
	limits  []string // the first few limit refusals' texts
}

// judge counts one answer; true when the request was answered.
func (st *agentStats) judge(a answer, err error) bool {
	switch {
	case err != nil:
		st.failed.Add(1)
		return false
	case a.status == http.StatusServiceUnavailable || a.status == http.StatusTooManyRequests:
		if strings.Contains(a.body, "limit") {
			st.limited.Add(1)
			st.mu.Lock()
			if len(st.limits) < 3 {
				st.limits = append(st.limits, fmt.Sprintf("%d %s", a.status, strings.TrimSpace(a.body)))
			}
			st.mu.Unlock()
		} else {
			st.refused.Add(1)
		}
		return false
	case a.status != http.StatusOK && a.status != http.StatusAccepted:
		st.refused.Add(1)
		return false
	}
	st.ok.Add(1)
	return true
}

// called is judge for a tools/call, counting it when it was answered.
func (st *agentStats) called(a answer, err error) bool {
	ok := st.judge(a, err)
	if ok {
		st.calls.Add(1)
	}
	return ok
}

func (st *agentStats) latency(d time.Duration) {
	st.mu.Lock()
	st.lat = append(st.lat, d)
	st.mu.Unlock()
}

func (st *agentStats) answered(marker string) {
	st.mu.Lock()
	st.markers = append(st.markers, marker)
	st.mu.Unlock()
}

func (st *agentStats) pct(p float64) time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.lat) == 0 {
		return 0
	}
	s := slices.Clone(st.lat)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

type endState struct{ goroutines, fds, rss, sessions float64 }

// perSession is the most goroutines a live, idle session holds on a
// replica (its reader, its outbox and its serve loop, and a GET stream).
const perSession = 4

type report struct {
	opts     options
	perAgent map[string]*agentStats

	startOnce sync.Once
	t0        time.Time
	elapsed   time.Duration

	mu              sync.Mutex
	rss             []rssSample
	faults          []string
	startGoroutines []float64
	end             []endState

	calls, records, missing, twice int // echo markers answered; tools/call records; answered echoes without a record, with two
	answered                       int // tools/call requests answered, every agent
	auditFiles                     int
}

type rssSample struct {
	at  time.Duration
	rss []int64
}

func (r *report) start() time.Time {
	r.startOnce.Do(func() { r.t0 = time.Now() })
	return r.t0
}

func (r *report) addRSS(at time.Duration, rss []int64) {
	r.mu.Lock()
	r.rss = append(r.rss, rssSample{at, rss})
	r.mu.Unlock()
}

var markerRE = regexp.MustCompile(`soak-[a-z]+-[0-9]+`)

// checkAudit counts the tools/call records in every replica's audit logs
// and matches each answered echo's marker to its record.
func (r *report) checkAudit(dir string) error {
	// The logs and their rotated files, not their checkpoints or locks.
	files, _ := filepath.Glob(filepath.Join(dir, "audit-replica*.jsonl"))
	rotated, _ := filepath.Glob(filepath.Join(dir, "audit-replica*.jsonl.[0-9]*"))
	files = append(files, rotated...)
	r.auditFiles = len(files)
	seen := map[string]int{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		br := bufio.NewReaderSize(fh, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 && bytes.Contains(line, []byte(`"method":"tools/call"`)) {
				r.records++
				if m := markerRE.Find(line); m != nil {
					seen[string(m)]++
				}
			}
			if err != nil {
				break
			}
		}
		fh.Close()
	}
	for _, a := range agents {
		st := r.perAgent[a]
		r.answered += int(st.calls.Load())
		for _, m := range st.markers {
			r.calls++
			switch seen[m] {
			case 0:
				r.missing++
			case 1:
			default:
				r.twice++
			}
		}
	}
	return nil
}

// verdict is the run's failure, if any.
func (r *report) verdict() error {
	var errs []error
	if r.records < r.answered {
		errs = append(errs, fmt.Errorf("audit: %d tools/call records for %d answered calls", r.records, r.answered))
	}
	if r.missing > 0 || r.twice > 0 {
		errs = append(errs, fmt.Errorf("audit: of %d answered echo calls, %d have no record and %d more than one", r.calls, r.missing, r.twice))
	}
	for _, a := range agents[1:] {
		if st := r.perAgent[a]; st.limited.Load() > 0 {
			errs = append(errs, fmt.Errorf("%s got %d limit refusals during alice's flood, e.g. %q", a, st.limited.Load(), st.limits[0]))
		}
	}
	for i, e := range r.end {
		// Idle, a replica keeps its listeners, upstream readers, the
		// store's, and the sessions still live (those whose DELETE a
		// killed replica or Redis lost wait for the idle timeout): far
		// more than those means sessions or calls leaked.
		if i < len(r.startGoroutines) && e.goroutines > 2*r.startGoroutines[i]+200+perSession*e.sessions {
			errs = append(errs, fmt.Errorf("replica %d ends with %.0f goroutines (%.0f at start, %.0f live sessions): a leak", i, e.goroutines, r.startGoroutines[i], e.sessions))
		}
	}
	return errors.Join(errs...)
}

func (r *report) markdown() string {
	var b strings.Builder
	o := r.opts
	fmt.Fprintf(&b, "Soak run of %s (%d replicas sharing Redis, alice flooding with %d workers, bob and carol 4 each; faults: %v):\n\n",
		r.elapsed.Round(time.Second), o.replicas, o.flood, o.faults)
	b.WriteString("| agent | sessions | answered | limit 503/429 | other refusals | transport errors | abandoned slow calls | echo p50 | echo p99 |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, a := range agents {
		st := r.perAgent[a]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %s | %s |\n", a, st.sessions.Load(), st.ok.Load(), st.limited.Load(),
			st.refused.Load(), st.failed.Load(), st.abandoned.Load(), ms(st.pct(0.5)), ms(st.pct(0.99)))
	}
	fmt.Fprintf(&b, "\nAudit: %d tools/call records in %d files for %d answered calls (the rest: calls the client gave up on or a kill cut, decided and recorded before that); of %d answered echo calls, each carrying a marker of its own, %d have no record and %d more than one.\n",
		r.records, r.auditFiles, r.answered, r.calls, r.missing, r.twice)
	b.WriteString("\n| replica | RSS over the run (MB) | goroutines start → end | live sessions at end | open fds at end |\n|---|---|---|---|---|\n")
	for i := range r.end {
		var rss []string
		for _, s := range r.rss {
			if i < len(s.rss) {
				rss = append(rss, strconv.FormatInt(s.rss[i]>>20, 10))
			}
		}
		e := r.end[i]
		fmt.Fprintf(&b, "| %d | %s | %.0f → %.0f | %.0f | %.0f |\n", i, strings.Join(rss, " "), r.startGoroutines[i], e.goroutines, e.sessions, e.fds)
	}
	if len(r.faults) > 0 {
		b.WriteString("\nFaults:\n")
		for _, f := range r.faults {
			fmt.Fprintf(&b, "- %s\n", strings.TrimSpace(f))
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

// writeReadme puts table between the README's soak markers.
func writeReadme(path, table string) error {
	const begin, end = "<!-- soak:begin -->", "<!-- soak:end -->"
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %s ... %s section", path, begin, end)
	}
	head := fmt.Sprintf("%s\nGenerated by `make soak` on %s:\n\n", begin, time.Now().UTC().Format("2006-01-02"))
	return os.WriteFile(path, []byte(s[:i]+head+table+s[j:]), 0o644)
}
