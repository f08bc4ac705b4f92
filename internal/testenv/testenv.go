package testenv

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Root is the repository root (the directory holding go.mod).
func Root(t testing.TB) string {
	t.Helper()
	r := RootDir()
	if r == "" {
		t.Fatal("testenv: cannot locate source")
	}
	return r
}

// RootDir is Root for code that runs before any test (TestMain); "" if
// the source cannot be located.
func RootDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return ""
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Nexus builds ./cmd/nexus as a release does (static, -trimpath: the
// packages make build and vet compiled serve it too) and returns the
// binary's path; see Build: one link serves every test process of the
// checkout. Its directory
// also works as a PATH entry so configs can say "command": "nexus": it
// holds nothing else but the build's lock file.
func Nexus(t testing.TB) string {
	t.Helper()
	p, err := Build(Root(t), "./cmd/nexus", exe("nexus"), []string{"-trimpath"}, []string{"CGO_ENABLED=0"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// NPMPackage returns the directory of an npm package from tools/npm, which
// `make testdeps` installs. Missing packages fail the test with the fix.
func NPMPackage(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(Root(t), "tools", "npm", "node_modules", filepath.FromSlash(name))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		t.Fatalf("npm package %s is not installed (%v); run `make testdeps` (npm ci in tools/npm) first", name, err)
	}
	return dir
}

// Node returns the path of the node binary, failing the test if there is none.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH: %v; install Node.js (the README lists the requirements)", err)
	}
	return p
}

// OPA returns the path of the opa binary that `make testdeps` installs in
// bin/tools, which the Rego filter tests build their policies with.
func OPA(t testing.TB) string {
	t.Helper()
	p := filepath.Join(Root(t), "bin", "tools", exe("opa"))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the OPA compiler is not installed (%v); run `make testdeps` first (it installs bin/tools/opa from the Go module proxy)", err)
	}
	return p
}

// RedisServer starts a redis-server (Redis 7 or Valkey, from the
// machine's packages; make testdeps installs it) on a free loopback port,
// without persistence, stopped by PID when the test ends, and returns its
// redis:// URL.
func RedisServer(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if bin, err = exec.LookPath("valkey-server"); err != nil {
			t.Fatalf("redis-server is not installed (%v); run `make testdeps` (apt-get install -y redis-server)", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
		"--dir", t.TempDir(), "--protected-mode", "yes")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "redis://" + addr + "/0"
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not listen on %s within 30 s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
