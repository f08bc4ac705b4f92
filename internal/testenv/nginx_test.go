//go:build unix

package testenv

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// backend is a tiny upstream that counts the requests it got and keeps
// the headers of the last one.
type backend struct {
	name string
	srv  *httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	last http.Header
}

func newBackend(t *testing.T, name string, h http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{name: name}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		b.mu.Lock()
		b.last = r.Header.Clone()
		b.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Set-Cookie", "backend="+name) // what a sticky setup would pin on
		fmt.Fprint(w, name)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *backend) addr() string { return strings.TrimPrefix(b.srv.URL, "http://") }

func (b *backend) header() http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func do(t *testing.T, c *http.Client, method, url string, body io.Reader, hdr map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Requests alternate between the upstreams, whatever they carry: the same
// session header, token and cookies do not pin a client to one.
func TestNginxRoundRobin(t *testing.T) {
	a, b := newBackend(t, "a", nil), newBackend(t, "b", nil)
	url := Nginx(t, []string{a.addr(), b.addr()})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	hdr := map[string]string{"Mcp-Session-Id": "s-1", "Authorization": "Bearer tok", "Last-Event-ID": "ev-7"}
	var got []string
	for i := 0; i < 10; i++ {
		method, body := http.MethodGet, io.Reader(nil)
		if i%2 == 1 {
			method, body = http.MethodPost, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		}
		code, name := do(t, c, method, url+"/mcp", body, hdr)
		if code != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, code, name)
		}
		got = append(got, name)
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("upstreams in turn: %v; want them alternating (round robin, no stickiness)", got)
		}
	}
	if a.hits.Load() != 5 || b.hits.Load() != 5 {
		t.Errorf("hits a=%d b=%d, want 5 each", a.hits.Load(), b.hits.Load())
	}
	for _, be := range []*backend{a, b} {
		h := be.header()
		for k, v := range hdr {
			if h.Get(k) != v {
				t.Errorf("backend %s got %s %q, want %q", be.name, k, h.Get(k), v)
			}
		}
		if h.Get("Connection") != "" {
			t.Errorf("backend %s got Connection %q; want none (keepalive to upstreams)", be.name, h.Get("Connection"))
		}
	}
}

// An SSE response streams through as the upstream writes it: the client
// reads the first event while the upstream still waits to write the
// second, which it only does once the client saw the first. A request
// body streams the same way, before the client finished it.
func TestNginxStreams(t *testing.T) {
	next := make(chan struct{}) // the client lets the upstream write its next event
	firstLine := make(chan string, 1)
	be := newBackend(t, "sse", func(w http.ResponseWriter, r *http.Request) {
		line, err := bufio.NewReader(r.Body).ReadString('\n')
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		firstLine <- line
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // headers alone, as a GET stream with nothing to say yet
		for _, ev := range []string{"first", "second"} {
			select {
			case <-next:
			case <-r.Context().Done():
				return
			case <-time.After(30 * time.Second):
				return
			}
			fmt.Fprintf(w, "id: %s\nevent: message\ndata: %s\n\n", ev, ev)
			w.(http.Flusher).Flush()
		}
	})
	url := Nginx(t, []string{be.addr()})

	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", pr)
	req.Header.Set("Accept", "text/event-stream")
	type result struct {
		resp *http.Response
		err  error
	}
	respc := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		respc <- result{resp, err}
	}()
	// The first part of the body reaches the upstream while the rest is
	// still unwritten.
	if _, err := io.WriteString(pw, "part one\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case line := <-firstLine:
		if line != "part one\n" {
			t.Fatalf("the upstream read %q", line)
		}
	case r := <-respc:
		t.Fatalf("the request ended before the upstream read its body: %v %v", r.resp, r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the first part of the request body did not reach the upstream within 20 s (request buffering?)")
	}
	pw.Close()

	var r result
	select {
	case r = <-respc:
	case <-time.After(20 * time.Second):
		t.Fatal("no response headers within 20 s, while the upstream sent them (response buffering?)")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.resp.Body.Close()
	if ct := r.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan string)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(r.resp.Body)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- d
			}
		}
	}()
	event := func() string {
		t.Helper()
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("the stream ended early")
			}
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event within 20 s (response buffering?)")
		}
		return ""
	}
	let := func() {
		t.Helper()
		select {
		case next <- struct{}{}:
		case <-time.After(20 * time.Second):
			t.Fatal("the upstream stopped waiting to write")
		}
	}
	let() // only now may the upstream write the first event
	if e := event(); e != "first" {
		t.Fatalf("first event %q", e)
	}
	let() // and only now the second
	if e := event(); e != "second" {
		t.Fatalf("second event %q", e)
	}
	if _, ok := <-events; ok {
		t.Fatal("an event after the second")
	}
}

// A request nginx could not deliver (nothing listens) goes to the next
// upstream; a POST an upstream received and then dropped without an
// answer is not sent to another (it fails with 502), while a GET is. No
// request reaches two upstreams.
func TestNginxRetries(t *testing.T) {
	t.Run("dead upstream", func(t *testing.T) {
		good := newBackend(t, "good", nil)
		url := Nginx(t, []string{deadAddr(t), good.addr()})
		c := &http.Client{Timeout: 10 * time.Second}
		for i := 0; i < 6; i++ {
			code, body := do(t, c, http.MethodPost, url+"/mcp", strings.NewReader(`{"n":`+strconv.Itoa(i)+`}`), nil)
			if code != http.StatusOK || body != "good" {
				t.Fatalf("POST %d: %d %q; want it delivered to the live upstream", i, code, body)
			}
		}
		if n := good.hits.Load(); n != 6 {
			t.Errorf("the live upstream got %d requests, want 6 (each once)", n)
		}
	})

	t.Run("upstream drops the request", func(t *testing.T) {
		dropping := newBackend(t, "dropping", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			conn.Close() // as a replica killed mid-request
		})
		good := newBackend(t, "good", nil)
		url := Nginx(t, []string{dropping.addr(), good.addr()})
		c := &http.Client{Timeout: 10 * time.Second}

		failed := 0
		for i := 0; i < 6; i++ {
			code, body := do(t, c, http.MethodPost, url+"/mcp", strings.NewReader(`{"n":`+strconv.Itoa(i)+`}`), nil)
			switch {
			case code == http.StatusBadGateway:
				failed++
			case code != http.StatusOK || body != "good":
				t.Fatalf("POST %d: %d %q", i, code, body)
			}
		}
		d, g := dropping.hits.Load(), good.hits.Load()
		if d+g != 6 || int64(failed) != d || d == 0 {
			t.Fatalf("POSTs: dropping upstream got %d, live one %d, %d failed with 502; want 6 deliveries in all, each dropped one failed, none sent again", d, g, failed)
		}

		dropping.hits.Store(0)
		good.hits.Store(0)
		for i := 0; i < 6; i++ {
			code, body := do(t, c, http.MethodGet, url+"/mcp", nil, nil)
			if code != http.StatusOK || body != "good" {
				t.Fatalf("GET %d: %d %q; want it retried on the live upstream", i, code, body)
			}
		}
		if d, g := dropping.hits.Load(), good.hits.Load(); g != 6 || d == 0 {
			t.Errorf("GETs: dropping upstream got %d, live one %d; want every GET answered by the live one", d, g)
		}
	})
}

// The cleanup stops nginx: its PID is gone, its port closed.
func TestNginxCleanup(t *testing.T) {
	be := newBackend(t, "a", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			fmt.Fprint(w, "a")
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	var pid int
	var stream *http.Response
	var url string
	var pidFile []byte
	t.Run("running", func(t *testing.T) {
		p := startNginx(t, "", []string{be.addr()})
		pid, url = p.cmd.Process.Pid, p.url
		if !Running(pid) {
			t.Fatalf("nginx (pid %d) is not running", pid)
		}
		pidFile, _ = os.ReadFile(filepath.Join(p.dir, "nginx.pid"))
		if code, body := do(t, http.DefaultClient, http.MethodGet, url+"/", nil, nil); code != http.StatusOK || body != "a" {
			t.Fatalf("GET: %d %q", code, body)
		}
		// A stream left open does not keep nginx from stopping.
		c := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 20 * time.Second}}
		resp, err := c.Get(url + "/stream")
		if err != nil {
			t.Fatal(err)
		}
		stream = resp
	})
	if stream != nil {
		defer stream.Body.Close()
	}
	if strings.TrimSpace(string(pidFile)) != strconv.Itoa(pid) {
		t.Errorf("pid file %q, want %d", pidFile, pid)
	}
	if Running(pid) {
		t.Fatalf("nginx (pid %d) still runs after its test ended", pid)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections", url)
	}
}

// A config nginx rejects fails with nginx's own words.
func TestNginxBadUpstream(t *testing.T) {
	ft := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		startNginx(ft, "", []string{"127.0.0.1:99999"})
	}()
	<-done
	if !strings.Contains(ft.msg, "nginx -t rejects the config") || !strings.Contains(ft.msg, "99999") {
		t.Fatalf("message: %s", ft.msg)
	}
}

// fatalTB records the first Fatal and ends the goroutine, as testing's
// own does, without failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
