package stdio

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestBuildEnv(t *testing.T) {
	host := []string{"PATH=/bin", "SECRET=x", "HOME=/old", "HOME=/h", "=C:=C:\\x", "BROKEN", "KEEP=k"}
	env, err := buildEnv(host, []string{"KEEP", "ABSENT"}, map[string]string{"LANG": "en", "PATH": "/override"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/override", "HOME=/h", "KEEP=k", "LANG=en"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if env, _ := buildEnv(nil, nil, nil, false); env == nil {
		t.Error("an empty environment must be non-nil, or exec.Cmd inherits the host's")
	}
	for _, k := range []string{"", "A=B", "A\x00"} {
		if _, err := buildEnv(nil, nil, map[string]string{k: "v"}, false); err == nil {
			t.Errorf("key %q accepted", k)
		}
	}
	if _, err := buildEnv(nil, nil, map[string]string{"A": "v\x00"}, false); err == nil {
		t.Error("NUL in value accepted")
	}
}

// TestBuildEnvWindowsCase exercises the Windows rules on any OS: keys match
// case-insensitively, so "Path" is kept and overridden by "PATH".
func TestBuildEnvWindowsCase(t *testing.T) {
	host := []string{"Path=C:\\Windows", "SystemRoot=C:\\Windows", "PathExt=.COM;.EXE", "secret=x", "Keep=1"}
	env, err := buildEnv(host, []string{"KEEP"}, map[string]string{"path": "C:\\bin"}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"path=C:\\bin", "SystemRoot=C:\\Windows", "PathExt=.COM;.EXE", "Keep=1"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	if got := lookupEnv(env, "PATH", true); got != "C:\\bin" {
		t.Errorf("PATH = %q", got)
	}
	if got := lookupEnv(env, "PATH", false); got != "" {
		t.Errorf("case-sensitive lookup found %q", got)
	}
}

func TestPathExt(t *testing.T) {
	if got := parsePathExt(""); !slices.Equal(got, []string{".com", ".exe", ".bat", ".cmd"}) {
		t.Errorf("default = %q", got)
	}
	if got := parsePathExt(".COM;.EXE;;cmd; .Bat "); !slices.Equal(got, []string{".com", ".exe", ".cmd", ".bat"}) {
		t.Errorf("parsed = %q", got)
	}
	exts := []string{".exe", ".cmd"}
	if got := withExts("dir/npx", exts); !slices.Equal(got, []string{"dir/npx.exe", "dir/npx.cmd"}) {
		t.Errorf("no extension: %q (the bare name must not be tried)", got)
	}
	if got := withExts("dir/npx.cmd", exts); !slices.Equal(got, []string{"dir/npx.cmd", "dir/npx.cmd.exe", "dir/npx.cmd.cmd"}) {
		t.Errorf("with extension: %q", got)
	}
	if got := withExts("dir/npx", nil); !slices.Equal(got, []string{"dir/npx"}) {
		t.Errorf("unix: %q", got)
	}
}

func TestErrorMessages(t *testing.T) {
	ee := &ExitError{Server: "fs", Code: 1, Stderr: []string{"a", "", "b", "c", "d"}}
	if got, want := ee.Error(), `server "fs": exited with code 1; last stderr: b | c | d`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ee = &ExitError{Server: "fs", Code: -1, Signal: "SIGKILL", During: "initialize", StdoutNoise: []string{"hello"}}
	if got, want := ee.Error(), `server "fs": killed by signal SIGKILL during initialize; last non-JSON stdout: hello`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if errors.Is(ee, io.EOF) {
		t.Error("a killed server is not a clean close")
	}
	if !errors.Is(&ExitError{Server: "fs"}, io.EOF) {
		t.Error("a clean exit should match io.EOF")
	}
	se := &StartError{Server: "fs", Command: []string{"npx", "-y"}, Path: "/usr/bin:/bin", Kind: NotFound}
	if got, want := se.Error(), `server "fs": command not found: "npx" (PATH seen by the server: /usr/bin:/bin)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRingAndKeepLine(t *testing.T) {
	r := newRing(3)
	if got := r.snapshot(); len(got) != 0 {
		t.Errorf("empty ring = %q", got)
	}
	for _, s := range []string{"1", "2", "3", "4"} {
		r.add(s)
	}
	if got := r.snapshot(); !slices.Equal(got, []string{"2", "3", "4"}) {
		t.Errorf("ring = %q", got)
	}
	long := strings.Repeat("é", maxKeptLine) // 2 bytes per rune
	if got := keepLine([]byte(long)); len(got) > maxKeptLine || !strings.HasPrefix(long, got) {
		t.Errorf("keepLine cut badly: %d bytes", len(got))
	}
	if got := keepLine([]byte("a\xffb")); got != "a\uFFFDb" {
		t.Errorf("invalid UTF-8 kept as %q", got)
	}
}
