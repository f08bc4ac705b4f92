package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

const nginxConf = "nginx/nexus.conf"

// directive is one nginx directive: its name, arguments and, for a block,
// what is inside.
type directive struct {
	name  string
	args  []string
	block []directive
	line  int
}

// parseNginx reads an nginx configuration into its directives: comments
// dropped, quotes understood, blocks nested. It knows the syntax, not the
// meaning; nginx -t (TestNginxConfigSyntax) checks that.
func parseNginx(t *testing.T, src string) []directive {
	t.Helper()
	type tok struct {
		s    string
		line int
	}
	var toks []tok
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '{' || c == '}' || c == ';':
			toks = append(toks, tok{string(c), line})
			i++
		case c == '"' || c == '\'':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				t.Fatalf("%s:%d: unterminated quote", nginxConf, line)
			}
			toks = append(toks, tok{src[i+1 : j], line})
			i = j + 1
		default:
			j := i
			for j < len(src) && !strings.ContainsRune(" \t\r\n{};#\"'", rune(src[j])) {
				j++
			}
			toks = append(toks, tok{src[i:j], line})
			i = j
		}
	}
	var parse func(depth int) []directive
	pos := 0
	parse = func(depth int) []directive {
		var out []directive
		for pos < len(toks) {
			if toks[pos].s == "}" {
				if depth == 0 {
					t.Fatalf("%s:%d: } without {", nginxConf, toks[pos].line)
				}
				pos++
				return out
			}
			d := directive{name: toks[pos].s, line: toks[pos].line}
			pos++
			for pos < len(toks) && toks[pos].s != ";" && toks[pos].s != "{" {
				if toks[pos].s == "}" {
					t.Fatalf("%s:%d: directive %s is missing its ;", nginxConf, d.line, d.name)
				}
				d.args = append(d.args, toks[pos].s)
				pos++
			}
			if pos >= len(toks) {
				t.Fatalf("%s:%d: directive %s is missing its ;", nginxConf, d.line, d.name)
			}
			if toks[pos].s == "{" {
				pos++
				d.block = parse(depth + 1)
			} else {
				pos++
			}
			out = append(out, d)
		}
		if depth > 0 {
			t.Fatalf("%s: a { is never closed", nginxConf)
		}
		return out
	}
	return parse(0)
}

// find is every directive called name, at any depth.
func find(ds []directive, name string) []directive {
	var out []directive
	for _, d := range ds {
		if d.name == name {
			out = append(out, d)
		}
		out = append(out, find(d.block, name)...)
	}
	return out
}

// nginxSize parses an nginx size (10m, 512k, 1g, 1048576).
func nginxSize(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult, s = 1<<10, s[:len(s)-1]
	case "m":
		mult, s = 1<<20, s[:len(s)-1]
	case "g":
		mult, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// nginxTime parses an nginx time in seconds, minutes or hours (3600,
// 3600s, 60m, 1h, 1h30m); days and longer are refused.
func nginxTime(s string) (time.Duration, error) {
	if _, err := strconv.Atoi(s); err == nil {
		s += "s"
	}
	if strings.ContainsAny(s, "dwMy") {
		return 0, fmt.Errorf("%q: write it in hours, minutes or seconds", s)
	}
	return time.ParseDuration(s)
}

func TestNginxConfig(t *testing.T) {
	src, err := os.ReadFile(nginxConf)
	if err != nil {
		t.Fatal(err)
	}
	conf := parseNginx(t, string(src))

	ups := find(conf, "upstream")
	if len(ups) != 1 || len(ups[0].args) != 1 {
		t.Fatalf("want one upstream NAME { ... }, found %d", len(ups))
	}
	up := ups[0]

	t.Run("upstream: three replicas, round robin", func(t *testing.T) {
		var servers []string
		for _, d := range up.block {
			switch d.name {
			case "server":
				servers = append(servers, d.args[0])
				for _, a := range d.args[1:] {
					if a == "backup" || a == "down" || strings.HasPrefix(a, "route=") {
						t.Errorf("%s:%d: server %s is %s; every replica takes requests alike", nginxConf, d.line, d.args[0], a)
					}
				}
			case "keepalive", "keepalive_timeout", "keepalive_requests", "keepalive_time", "zone":
			default:
				// ip_hash, hash, sticky, least_conn, random, ...: any
				// balancing method but round robin, the default.
				t.Errorf("%s:%d: upstream has %s; it should balance round robin (the default) with no stickiness: the replicas share sessions", nginxConf, d.line, d.name)
			}
		}
		want := []string{"127.0.0.1:8751", "127.0.0.1:8752", "127.0.0.1:8753"}
		if strings.Join(servers, " ") != strings.Join(want, " ") {
			t.Errorf("upstream servers are %v, want %v", servers, want)
		}
		for _, banned := range []string{"ip_hash", "hash", "sticky", "sticky_cookie_insert"} {
			if ds := find(conf, banned); len(ds) > 0 {
				t.Errorf("%s:%d: %s pins clients to a replica", nginxConf, ds[0].line, banned)
			}
		}
	})

	locs := find(conf, "location")
	var loc *directive
	for i := range locs {
		if strings.Join(locs[i].args, " ") == "/" {
			loc = &locs[i]
		}
	}
	if loc == nil {
		t.Fatal("no location / {}")
	}
	servers := find(conf, "server")
	var srv *directive
	for i := range servers {
		if len(servers[i].block) > 0 {
			srv = &servers[i]
		}
	}
	if srv == nil {
		t.Fatal("no server {} block")
	}
	// set is a directive's arguments where the location sees it: its own,
	// else the server's, else the file's top level (the http block's).
	set := func(name string) []string {
		for _, scope := range [][]directive{loc.block, srv.block, conf} {
			for _, d := range scope {
				if d.name == name {
					return d.args
				}
			}
		}
		return nil
	}
	is := func(name string, want ...string) {
		t.Helper()
		if got := set(name); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s is %q, want %q", name, got, want)
		}
	}

	t.Run("proxies to the upstream over HTTP/1.1", func(t *testing.T) {
		is("proxy_pass", "http://"+up.args[0])
		is("proxy_http_version", "1.1")
		// Keepalive to the upstream needs the client's Connection header
		// cleared.
		cleared := false
		for _, d := range loc.block {
			if d.name == "proxy_set_header" && len(d.args) == 2 && strings.EqualFold(d.args[0], "Connection") && d.args[1] == "" {
				cleared = true
			}
		}
		if !cleared {
			t.Errorf(`location / does not clear the Connection header (proxy_set_header Connection "";), so keepalive to the replicas does not work`)
		}
	})

	t.Run("SSE streams through", func(t *testing.T) {
		is("proxy_buffering", "off")
		is("proxy_cache", "off")
		if g := set("gzip"); g != nil && g[0] != "off" {
			t.Errorf("gzip is %v: compression holds events back", g)
		}
		for _, name := range []string{"proxy_read_timeout", "proxy_send_timeout"} {
			v := set(name)
			if v == nil {
				t.Errorf("%s is not set; nginx's 60s default cuts a quiet event stream", name)
				continue
			}
			d, err := nginxTime(v[0])
			if err != nil {
				t.Errorf("%s %s: %v", name, v[0], err)
			} else if d < 10*time.Minute {
				t.Errorf("%s is %s; a quiet event stream needs far longer", name, d)
			}
		}
	})

	t.Run("request headers go through", func(t *testing.T) {
		if v := set("proxy_pass_request_headers"); v != nil && v[0] != "on" {
			t.Errorf("proxy_pass_request_headers is off: Authorization and Mcp-Session-Id would not reach the gateway")
		}
		mcpHeaders := []string{"authorization", "mcp-session-id", "mcp-protocol-version", "last-event-id"}
		for _, d := range find(conf, "proxy_set_header") {
			if len(d.args) > 0 && containsFold(mcpHeaders, d.args[0]) {
				t.Errorf("%s:%d: proxy_set_header %s replaces the client's header", nginxConf, d.line, d.args[0])
			}
		}
		for _, d := range find(conf, "proxy_hide_header") {
			if len(d.args) > 0 && containsFold([]string{"mcp-session-id", "www-authenticate"}, d.args[0]) {
				t.Errorf("%s:%d: proxy_hide_header %s keeps the gateway's header from the client", nginxConf, d.line, d.args[0])
			}
		}
		if ds := find(conf, "underscores_in_headers"); len(ds) > 0 {
			t.Logf("underscores_in_headers is set; the MCP headers use hyphens and do not need it")
		}
	})

	t.Run("a POST never runs twice", func(t *testing.T) {
		for _, d := range find(conf, "proxy_next_upstream") {
			for _, a := range d.args {
				if a == "non_idempotent" {
					t.Errorf("%s:%d: proxy_next_upstream non_idempotent sends a POST (a tool call) that reached one replica to another", nginxConf, d.line)
				}
			}
		}
		if ds := find(conf, "proxy_next_upstream"); len(ds) == 0 {
			t.Logf("proxy_next_upstream is nginx's default (error timeout)")
		}
	})

	t.Run("body limit is the gateway's", func(t *testing.T) {
		v := set("client_max_body_size")
		if v == nil {
			t.Fatalf("client_max_body_size is not set; nginx's 1m default refuses messages the gateway takes (up to %d bytes)", mcp.MaxFrameSize)
		}
		n, err := nginxSize(v[0])
		if err != nil {
			t.Fatalf("client_max_body_size %s: %v", v[0], err)
		}
		if n != mcp.MaxFrameSize {
			t.Errorf("client_max_body_size is %s (%d bytes); the gateway's default body limit is %d", v[0], n, mcp.MaxFrameSize)
		}
	})
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// TestNginxConfigSyntax has nginx itself check the file (nginx -t), in
// an http block as /etc/nginx/conf.d/ includes it, where nginx is
// installed (make testdeps installs Debian's).
func TestNginxConfigSyntax(t *testing.T) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		for _, p := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
			if _, err := os.Stat(p); err == nil {
				bin = p
			}
		}
	}
	if bin == "" {
		t.Fatal("nginx is not installed; run `make testdeps` (apt-get install -y nginx)")
	}
	abs, err := filepath.Abs(nginxConf)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	q := func(name string) string { return strconv.Quote(filepath.Join(dir, name)) }
	main := `pid ` + q("nginx.pid") + `;
error_log ` + q("error.log") + `;
events {}
http {
  access_log ` + q("access.log") + `;
  client_body_temp_path ` + q("client_body") + `;
  proxy_temp_path ` + q("proxy") + `;
  fastcgi_temp_path ` + q("fastcgi") + `;
  uwsgi_temp_path ` + q("uwsgi") + `;
  scgi_temp_path ` + q("scgi") + `;
  include ` + strconv.Quote(abs) + `;
}
`
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(main), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-t", "-q", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", filepath.Join(dir, "nginx.conf")).CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" && regexp.MustCompile(`\[(warn|emerg|alert|crit|error)\]`).MatchString(s) {
		t.Errorf("nginx -t:\n%s", s)
	}
}

const systemdUnit = "systemd/nexus@.service"

// unitValues is every Key=value of a systemd unit file, by key.
func unitValues(t *testing.T, file string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l[0] == '#' || l[0] == ';' || l[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			t.Fatalf("%s: %q is not Key=value", file, l)
		}
		out[k] = append(out[k], v)
	}
	return out
}

// TestSystemdUnit checks the unit that runs the replicas nginx balances
// over: each on 127.0.0.1 and the port its instance name gives, stopped
// with SIGTERM and given longer than the gateway's grace.
func TestSystemdUnit(t *testing.T) {
	u := unitValues(t, systemdUnit)
	if len(u["ExecStart"]) != 1 {
		t.Fatalf("%s: want one ExecStart, found %d", systemdUnit, len(u["ExecStart"]))
	}
	argv := strings.Fields(u["ExecStart"][0])
	if filepath.Base(argv[0]) != "nexus" || len(argv) < 2 || argv[1] != "serve" {
		t.Errorf("ExecStart %q is not nexus serve", argv)
	}
	if l, _ := flag(argv, "listen"); l != "127.0.0.1:%i" {
		t.Errorf("ExecStart's --listen is %q, want 127.0.0.1:%%i (the instance name is the port nginx's upstream names)", l)
	}
	if _, ok := flag(argv, "config"); !ok {
		t.Errorf("ExecStart has no --config")
	}
	if s := u["KillSignal"]; len(s) > 0 && s[len(s)-1] != "SIGTERM" {
		t.Errorf("KillSignal is %s; nexus stops cleanly on SIGTERM", s[len(s)-1])
	}
	stop := u["TimeoutStopSec"]
	if len(stop) == 0 {
		t.Fatalf("TimeoutStopSec is not set")
	}
	d, err := nginxTime(stop[len(stop)-1])
	if err != nil || d <= defaultGrace {
		t.Errorf("TimeoutStopSec %s is not longer than the gateway's grace (%v)", stop[len(stop)-1], defaultGrace)
	}
	if len(u["EnvironmentFile"]) == 0 {
		t.Errorf("no EnvironmentFile: the tokens and NEXUS_SESSION_STORE come from one")
	}
}
