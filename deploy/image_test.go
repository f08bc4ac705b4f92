package deploy

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/gateway"
	"github.com/nexus-mcp/nexus/internal/gateway/store"
)

// TestImageEntrypoint builds nexus as the Dockerfile does and runs it as
// the image would in the Deployment's pod: the image's entrypoint and the
// container's args, the ConfigMap's nexus.hcl, the Secret's values in the
// environment, and a redis-server started with the Redis Deployment's
// arguments as the session store (where redis-server is installed; else
// the memory store). Only --config, --listen and --metrics change, to a
// temporary file and free loopback ports. The gateway must become ready,
// answer an agent's token from the Secret, and exit 0 on SIGTERM within
// the pod's grace.
func TestImageEntrypoint(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds nexus and runs it")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image is linux")
	}
	m := loadManifests(t, manifestDir)
	d := m.deployments[gatewayName]
	c := container(t, &d.Spec.Template.Spec, gatewayContainer)
	env, err := m.envOf(c)
	if err != nil {
		t.Fatal(err)
	}
	entry := parseDockerfile(t, dockerfilePath).entrypoint(t)

	// The build, as in the Dockerfile's build stage.
	bin := t.TempDir()
	exe := filepath.Join(bin, "nexus")
	build := exec.Command(dockerBuild[0], append(dockerBuild[1:], "-o", exe, "./cmd/nexus")...)
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(build.Args, " "), err, out)
	}
	checkStatic(t, exe)

	// Every flag the image, the pod and the systemd unit give is one
	// nexus serve knows.
	help, err := exec.Command(exe, "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("nexus serve --help: %v\n%s", err, help)
	}
	var given []string
	given = append(given, entry[1:]...)
	given = append(given, c.Args...)
	given = append(given, strings.Fields(unitValues(t, systemdUnit)["ExecStart"][0])...)
	for _, a := range given {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(a, "=")
		if !regexp.MustCompile(`(?m)^\s+(-\w, )?` + regexp.QuoteMeta(name) + `\b`).Match(help) {
			t.Errorf("nexus serve has no flag %s (the image's entrypoint, the container's args or the systemd unit's ExecStart)", name)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The pod's files: the config where --config says, HOME an empty dir.
	root := t.TempDir()
	cfgFile := filepath.Join(root, "nexus.hcl")
	if err := os.WriteFile(cfgFile, []byte(m.configMaps["nexus-config"].Data[configMapKey]), 0o600); err != nil {
		t.Fatal(err)
	}
	env["HOME"] = filepath.Join(root, "home")
	if err := os.Mkdir(env["HOME"], 0o700); err != nil {
		t.Fatal(err)
	}
	env["NEXUS_SESSION_STORE"] = startRedis(t, m)
	t.Logf("session store: %s", store.Name(env["NEXUS_SESSION_STORE"]))
	// The image's PATH (distroless: /usr/local/bin holds nexus), for the
	// config's stdio server "nexus testserver".
	env["PATH"] = bin

	// --config is repeatable (the files are layered), so it is replaced
	// where it stands; --listen and --metrics: the last one wins.
	argv := append(append([]string{}, entry[1:]...), c.Args...)
	argv = replaceFlag(t, argv, "config", cfgFile)
	argv = append(argv, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0")
	cmd := exec.Command(exe, argv...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	var logs strings.Builder
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			logs.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := regexp.MustCompile(`serving MCP at (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				addr <- strings.TrimSuffix(m[1], gateway.EndpointPath)
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() || testing.Verbose() {
			logMu.Lock()
			t.Logf("nexus serve's stderr:\n%s", logs.String())
			logMu.Unlock()
		}
	})

	var base string
	select {
	case base = <-addr:
	case err := <-exited:
		stopped = true
		t.Fatalf("nexus serve exited before serving: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("nexus serve did not say where it serves within 60s")
	}

	client := &http.Client{Timeout: 5 * time.Second}
	if code := get(t, client, base+gateway.HealthPath); code != http.StatusOK {
		t.Errorf("%s: %d, want 200", gateway.HealthPath, code)
	}
	// Ready once the session store and the required servers answer.
	deadline := time.Now().Add(30 * time.Second)
	for code := 0; code != http.StatusOK; {
		if code = get(t, client, base+gateway.ReadyPath); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d after 30s, want 200", gateway.ReadyPath, code)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// An agent's token from the Secret opens a session; a wrong one does not.
	if code, sid := initialize(t, client, base, env["CLAUDE_TOKEN"]); code != http.StatusOK || sid == "" {
		t.Errorf("initialize with CLAUDE_TOKEN: %d, session %q; want 200 and a session", code, sid)
	}
	if code, _ := initialize(t, client, base, "not-"+env["CLAUDE_TOKEN"]); code != http.StatusUnauthorized {
		t.Errorf("initialize with a wrong token: %d, want 401", code)
	}

	// SIGTERM, as the kubelet sends after preStop: exit 0 within the
	// pod's terminationGracePeriodSeconds.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	tgp := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Errorf("nexus serve on SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(tgp):
		t.Errorf("nexus serve did not exit within the pod's terminationGracePeriodSeconds (%v) of SIGTERM", tgp)
	}
}

// replaceFlag sets the value of the one --name in argv.
func replaceFlag(t *testing.T, argv []string, name, value string) []string {
	t.Helper()
	out := append([]string{}, argv...)
	n := 0
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == "--"+name && i+1 < len(out):
			out[i+1] = value
			n++
			i++
		case strings.HasPrefix(out[i], "--"+name+"="):
			out[i] = "--" + name + "=" + value
			n++
		}
	}
	if n != 1 {
		t.Fatalf("--%s is given %d times in %q, want once", name, n, argv)
	}
	return out
}

// checkStatic checks that exe is what the Dockerfile means it to be: no
// dynamic loader (the final image has no libc), CGO off, paths trimmed.
func checkStatic(t *testing.T, exe string) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s needs a dynamic loader; the distroless static image has none", exe)
		}
	}
	bi, err := buildinfo.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("%s was built with CGO_ENABLED=%q", exe, settings["CGO_ENABLED"])
	}
	if settings["-trimpath"] != "true" {
		t.Errorf("%s was not built with -trimpath", exe)
	}
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Logf("GET %s: %v", url, err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// initialize opens an MCP session with a bearer token: the status and the
// Mcp-Session-Id.
func initialize(t *testing.T, c *http.Client, base, token string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"deploy-test","version":"0"}}}`
	req, err := http.NewRequest(http.MethodPost, base+gateway.EndpointPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// startRedis runs redis-server with the Redis Deployment's arguments (its
// password from the Secret) on a free loopback port, and returns the
// session store URL for it with the Secret's URL's credentials.
func startRedis(t *testing.T, m *manifests) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if bin, err = exec.LookPath("valkey-server"); err != nil {
			t.Fatal("redis-server is not installed; run `make testdeps` (apt-get install -y redis-server)")
		}
	}
	rd := m.deployments[redisName]
	rc := rd.Spec.Template.Spec.Containers[0]
	renv, err := m.envOf(&rc)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{}, rc.Args...)
	if len(args) > 0 && args[0] == "redis-server" {
		args = args[1:]
	}
	for i, a := range args {
		// The kubelet's $(VAR) expansion.
		args[i] = regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(a, func(s string) string { return renv[s[2:len(s)-1]] })
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	args = append(args, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--daemonize", "no", "--logfile", "")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("redis-server %s exited:\n%s", strings.Join(args, " "), out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %d within 10s:\n%s", port, out.String())
		}
	}
	secretURL := secretData(m.secrets["nexus-secrets"])["NEXUS_SESSION_STORE"]
	u, err := url.Parse(secretURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = fmt.Sprintf("127.0.0.1:%d", port)
	return u.String()
}
