package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nginx starts an nginx (Debian's package; make testdeps installs it) on a
// free loopback port in front of upstreams (host:port each), as a reverse
// proxy set up the way a streamable HTTP MCP deployment needs: plain round
// robin with no stickiness, HTTP/1.1 keepalive to the upstreams, no
// buffering or caching in either direction (SSE streams through as it is
// written), long read timeouts, and retries on the next upstream only where
// nginx makes them by default (a connection that fails, or an idempotent
// request; a POST that reached an upstream is never sent to another). A
// dead upstream is never marked down (max_fails=0): every new request may
// try it again, and nginx moves to the next when it cannot connect.
//
// It returns the base URL, http://127.0.0.1:PORT. The process is stopped
// by its PID when the test ends (SIGTERM, then SIGKILL); its error and
// access logs (with the upstream each request went to) are logged if the
// test failed.
func Nginx(t testing.TB, upstreams []string) string {
	t.Helper()
	return startNginx(t, "", upstreams).url
}

// NginxSite is Nginx with a site configuration of one's own (the upstream
// block and the server block that deploy/nginx/nexus.conf ships): the
// addresses of its upstream's servers become upstreams (their options
// kept), and its listen directives become one loopback port of this
// test's. So a test runs the very configuration users are given.
func NginxSite(t testing.TB, site string, upstreams []string) string {
	t.Helper()
	if !upstreamServer.MatchString(site) || !listenLine.MatchString(site) {
		t.Fatal("testenv.NginxSite: the site has no upstream server lines or no listen directive")
	}
	return startNginx(t, site, upstreams).url
}

var (
	upstreamServer = regexp.MustCompile(`(?m)^([ \t]*)server[ \t]+[^\s{;]+:\d+([^;\n]*);[ \t]*\n`)
	listenLine     = regexp.MustCompile(`(?m)^[ \t]*listen[ \t][^;\n]*;[ \t]*\n`)
)

// siteFor rewrites a site configuration for a test (see NginxSite).
func siteFor(site string, port int, token string, upstreams []string) string {
	first := true
	site = upstreamServer.ReplaceAllStringFunc(site, func(line string) string {
		if !first {
			return ""
		}
		first = false
		m := upstreamServer.FindStringSubmatch(line)
		var b strings.Builder
		for _, u := range upstreams {
			fmt.Fprintf(&b, "%sserver %s%s;\n", m[1], u, m[2])
		}
		return b.String()
	})
	first = true
	return listenLine.ReplaceAllStringFunc(site, func(string) string {
		if !first {
			return ""
		}
		first = false
		return "    listen 127.0.0.1:" + strconv.Itoa(port) + ";\n" +
			"    location = " + nginxReadyPath + " { access_log off; default_type text/plain; return 200 \"" + token + "\"; }\n"
	})
}

// nginxProc is one nginx that startNginx started.
type nginxProc struct {
	url  string
	dir  string // its prefix: config, logs, temp paths
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait returned
}

// nginxReadyPath answers the readiness probe's token from nginx itself, so
// the probe cannot mistake another program that took the port for it.
const nginxReadyPath = "/.testenv-nginx-ready"

func nginxBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	// Debian puts it in /usr/sbin, which an ordinary user's PATH may lack.
	for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	t.Fatal("nginx is not installed (not on PATH nor in /usr/sbin); run `make testdeps` (apt-get install -y nginx)")
	return ""
}

func startNginx(t testing.TB, site string, upstreams []string) *nginxProc {
	t.Helper()
	if len(upstreams) == 0 {
		t.Fatal("testenv.Nginx: no upstreams")
	}
	for _, u := range upstreams {
		if _, _, err := net.SplitHostPort(u); err != nil || strings.ContainsAny(u, " ;{}/\"'") {
			t.Fatalf("testenv.Nginx: upstream %q is not host:port", u)
		}
	}
	bin := nginxBinary(t)
	// A port nginx binds after this process let it go may be taken in
	// between; nginx then exits (after its own bind retries) saying so,
	// and the next attempt takes another port.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		p, err := tryNginx(t, bin, site, upstreams)
		if err == nil {
			return p
		}
		lastErr = err
		if !errors.Is(err, errAddrInUse) {
			break
		}
	}
	t.Fatal(lastErr)
	return nil
}

var errAddrInUse = errors.New("address already in use")

func tryNginx(t testing.TB, bin, site string, upstreams []string) (*nginxProc, error) {
	t.Helper()
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var tok [16]byte
	rand.Read(tok[:])
	token := hex.EncodeToString(tok[:])

	conf := filepath.Join(dir, "nginx.conf")
	errLog := filepath.Join(dir, "error.log")
	if err := os.WriteFile(conf, []byte(nginxConfig(dir, port, token, site, upstreams)), 0o600); err != nil {
		return nil, err
	}
	// -p: relative paths and the prefix are the temp dir; -e: the error
	// log nginx opens before it reads the config is there too, not in
	// /var/log/nginx (which an ordinary user cannot write).
	args := []string{"-p", dir + "/", "-c", conf, "-e", errLog}
	check := exec.Command(bin, append([]string{"-t", "-q"}, args...)...)
	if out, err := check.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nginx -t rejects the config (%v):\n%s\nerror log:\n%s\nconfig %s:\n%s", err, out, readFile(errLog), conf, readFile(conf))
	}

	cmd := exec.Command(bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cannot start %s: %v", bin, err)
	}
	p := &nginxProc{url: "http://127.0.0.1:" + strconv.Itoa(port), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("nginx error log:\n%s\nnginx access log:\n%s", readFile(errLog), readFile(filepath.Join(dir, "access.log")))
		}
	})

	// Ready when nginx itself answers the probe with this start's token.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}, Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.done:
			log := readFile(errLog)
			err := fmt.Errorf("nginx exited before it served (%v):\n%s\nerror log:\n%s", cmd.ProcessState, out.String(), log)
			if strings.Contains(log, "Address already in use") || strings.Contains(out.String(), "Address already in use") {
				err = fmt.Errorf("%w: %v", errAddrInUse, err)
			}
			return nil, err
		default:
		}
		if nginxProbe(client, p.url, token) {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop(t)
			return nil, fmt.Errorf("nginx did not answer on %s within 30 s:\n%s\nerror log:\n%s", p.url, out.String(), readFile(errLog))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func nginxProbe(c *http.Client, url, token string) bool {
	resp, err := c.Get(url + nginxReadyPath)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	return resp.StatusCode == http.StatusOK && string(b) == token
}

// stop ends the nginx it started, by its PID: SIGTERM (nginx's fast
// shutdown: it closes open streams rather than waiting for them), SIGKILL
// if it is still there after 10 s; it waits for the process either way.
func (p *nginxProc) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(10 * time.Second):
	}
	t.Errorf("nginx (pid %d) did not exit within 10 s of SIGTERM; killing it", p.cmd.Process.Pid)
	p.cmd.Process.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Errorf("nginx (pid %d) still not reaped 10 s after SIGKILL", p.cmd.Process.Pid)
	}
}

// nginxConfig is the whole configuration: one process in the foreground
// (master_process off: no worker runs as another user, a single round-robin
// state makes the order exact, and the PID started is the only one to
// stop), every path nginx writes under dir.
func nginxConfig(dir string, port int, token, site string, upstreams []string) string {
	q := func(name string) string { return strconv.Quote(filepath.Join(dir, name)) }
	var servers strings.Builder
	for _, u := range upstreams {
		// max_fails=0: never mark an upstream down; a killed replica's
		// requests move on at once (connection refused), and it serves
		// again as soon as it listens again.
		fmt.Fprintf(&servers, "    server %s max_fails=0;\n", u)
	}
	if site == "" {
		site = `  # Round robin (the default): no ip_hash, hash or sticky.
  upstream backends {
` + servers.String() + `    keepalive 32;
  }

  server {
    listen 127.0.0.1:` + strconv.Itoa(port) + `;
    server_name localhost;

    location = ` + nginxReadyPath + ` {
      access_log off;
      default_type text/plain;
      return 200 "` + token + `";
    }

    location / {
      proxy_pass http://backends;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;

      # SSE: stream every byte as it comes, both ways.
      proxy_buffering off;
      proxy_cache off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
      proxy_connect_timeout 5s;
      client_max_body_size 10m;

      # nginx's default: only a failed connection, or an idempotent
      # request, moves on to the next upstream; no non_idempotent, so a
      # POST an upstream received is never sent twice.
      proxy_next_upstream error timeout;
    }
  }
`
	} else {
		site = siteFor(site, port, token, upstreams)
	}
	return `# written by internal/testenv (Nginx)
daemon off;
master_process off;
pid ` + q("nginx.pid") + `;
error_log ` + q("error.log") + ` info;

events {
  worker_connections 1024;
}

http {
  log_format upstreams '$remote_addr [$time_local] "$request" $status $body_bytes_sent '
                       'upstream=$upstream_addr upstream_status=$upstream_status '
                       'session="$http_mcp_session_id" rt=$request_time';
  access_log ` + q("access.log") + ` upstreams;

  client_body_temp_path ` + q("client_body_temp") + `;
  proxy_temp_path       ` + q("proxy_temp") + `;
  fastcgi_temp_path     ` + q("fastcgi_temp") + `;
  uwsgi_temp_path       ` + q("uwsgi_temp") + `;
  scgi_temp_path        ` + q("scgi_temp") + `;

` + site + `
}
`
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}
