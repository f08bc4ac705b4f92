package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Dockerfile and the ignore file BuildKit reads for it (the context is
// the repository root: docker build -f deploy/Dockerfile .).
const (
	dockerfilePath   = "Dockerfile"
	dockerignorePath = "Dockerfile.dockerignore"
)

// dockerBuild is the build command of the Dockerfile's build stage, the
// Makefile's flags plus a static, path-free binary; the image test runs
// the same (image_test.go).
var dockerBuild = []string{"go", "build", "-trimpath", "-buildvcs=auto", `-ldflags=-s -w`}

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int    // where it starts
	cmd  string // upper case: FROM, RUN, ...
	args string
}

// stage is a FROM and what follows it.
type stage struct {
	from  string // the image, ARGs expanded
	name  string // AS name, or ""
	instr []instruction
}

type dockerfile struct {
	args   map[string]string // ARGs before the first FROM, with their defaults
	stages []stage
}

func parseDockerfile(t *testing.T, file string) *dockerfile {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []instruction
	var cur *instruction
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || line == "" && cur == nil {
			continue
		}
		cont := strings.HasSuffix(line, `\`)
		line = strings.TrimSuffix(line, `\`)
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: n, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args += " " + line
		}
		if !cont {
			cur.args = strings.Join(strings.Fields(cur.args), " ")
			all = append(all, *cur)
			cur = nil
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s: the instruction on line %d ends in a backslash", file, cur.line)
	}
	d := &dockerfile{args: map[string]string{}}
	for _, in := range all {
		switch {
		case in.cmd == "FROM":
			fields := strings.Fields(in.args)
			var image, name string
			for i := 0; i < len(fields); i++ {
				switch {
				case strings.HasPrefix(fields[i], "--"):
				case strings.EqualFold(fields[i], "AS") && i+1 < len(fields):
					name = fields[i+1]
					i++
				case image == "":
					image = fields[i]
				}
			}
			d.stages = append(d.stages, stage{from: expandArgs(image, d.args), name: name})
		case len(d.stages) == 0 && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			d.args[k] = strings.Trim(v, `"`)
		case len(d.stages) == 0:
			t.Fatalf("%s:%d: %s before the first FROM", file, in.line, in.cmd)
		default:
			s := &d.stages[len(d.stages)-1]
			s.instr = append(s.instr, in)
		}
	}
	if len(d.stages) == 0 {
		t.Fatalf("%s has no FROM", file)
	}
	return d
}

func expandArgs(s string, args map[string]string) string {
	return os.Expand(s, func(k string) string { return args[k] })
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instr {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// last is the stage's last cmd instruction (the one that counts for USER,
// ENTRYPOINT), or fails.
func (s stage) last(t *testing.T, cmd string) instruction {
	t.Helper()
	all := s.all(cmd)
	if len(all) == 0 {
		t.Fatalf("the stage FROM %s has no %s", s.from, cmd)
	}
	return all[len(all)-1]
}

// entrypoint is the final stage's ENTRYPOINT, which must be in exec (JSON)
// form: the final image has no shell to run a string.
func (d *dockerfile) entrypoint(t *testing.T) []string {
	t.Helper()
	in := d.stages[len(d.stages)-1].last(t, "ENTRYPOINT")
	var argv []string
	if err := json.Unmarshal([]byte(in.args), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("Dockerfile:%d: ENTRYPOINT %s is not in exec form ([\"/usr/local/bin/nexus\", \"serve\", ...]); the final image has no shell", in.line, in.args)
	}
	return argv
}

// flag is the value of --name in argv (--name v or --name=v; the last
// wins, as for nexus's flags), and whether it is there.
func flag(argv []string, name string) (string, bool) {
	var v string
	var ok bool
	for i := 0; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--"+name && i+1 < len(argv):
			v, ok = argv[i+1], true
			i++
		case strings.HasPrefix(a, "--"+name+"="):
			v, ok = strings.TrimPrefix(a, "--"+name+"="), true
		}
	}
	return v, ok
}

func TestDockerfile(t *testing.T) {
	d := parseDockerfile(t, dockerfilePath)
	if len(d.stages) < 2 {
		t.Fatalf("the Dockerfile has %d stage; it should build in one and ship the binary alone in another", len(d.stages))
	}
	final := d.stages[len(d.stages)-1]

	t.Run("final image is distroless or scratch", func(t *testing.T) {
		img := final.from
		if img != "scratch" && !regexp.MustCompile(`^gcr\.io/distroless/static(-debian\d+)?:(nonroot|latest|debug-nonroot)?(@sha256:[0-9a-f]{64})?$|^gcr\.io/distroless/static(-debian\d+)?@sha256:[0-9a-f]{64}$`).MatchString(img) {
			t.Errorf("the final stage is FROM %s; use gcr.io/distroless/static-debian12:nonroot (or scratch)", img)
		}
		if strings.Contains(img, "debug") {
			t.Errorf("the final stage is FROM %s, a debug image with a shell", img)
		}
	})

	t.Run("static build of ./cmd/nexus", func(t *testing.T) {
		var build *instruction
		for _, s := range d.stages[:len(d.stages)-1] {
			for _, in := range s.all("RUN") {
				if strings.Contains(in.args, "go build") {
					build = &in
				}
			}
		}
		if build == nil {
			t.Fatal("no build stage RUNs go build")
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-buildvcs", "./cmd/nexus"} {
			if !strings.Contains(build.args, want) {
				t.Errorf("Dockerfile:%d: the build does not use %s: %s", build.line, want, build.args)
			}
		}
		// The image test builds with the same command.
		want := strings.Join(dockerBuild[:len(dockerBuild)-1], " ") + ` -ldflags="-s -w"`
		if !strings.Contains(build.args, want) {
			t.Errorf("Dockerfile:%d: the build is not %q (image_test.go runs that; keep the two the same)", build.line, want)
		}
		if !strings.Contains(build.args, "GOFLAGS= ") {
			t.Errorf("Dockerfile:%d: GOFLAGS is not cleared for the build, so one from the environment could turn -buildvcs or -trimpath around", build.line)
		}
	})

	t.Run("runs as a numeric non-root user", func(t *testing.T) {
		u := final.last(t, "USER")
		uid, gid, _ := strings.Cut(u.args, ":")
		n, err := strconv.Atoi(uid)
		if err != nil {
			t.Fatalf("Dockerfile:%d: USER %s is not numeric; Kubernetes' runAsNonRoot can verify only a numeric user", u.line, u.args)
		}
		if n == 0 {
			t.Errorf("Dockerfile:%d: USER %s is root", u.line, u.args)
		}
		if gid != "" {
			if g, err := strconv.Atoi(gid); err != nil || g == 0 {
				t.Errorf("Dockerfile:%d: USER %s: the group is not a numeric non-root one", u.line, u.args)
			}
		}
	})

	t.Run("entrypoint serves the gateway on the exposed port", func(t *testing.T) {
		argv := d.entrypoint(t)
		copied := false
		for _, c := range final.all("COPY") {
			if strings.HasSuffix(c.args, " "+argv[0]) {
				copied = true
			}
		}
		if !copied {
			t.Errorf("ENTRYPOINT runs %s, which no COPY in the final stage puts there", argv[0])
		}
		if path.Base(argv[0]) != "nexus" || len(argv) < 2 || argv[1] != "serve" {
			t.Errorf("ENTRYPOINT %q is not nexus serve", argv)
		}
		if cfg, _ := flag(argv, "config"); cfg != "/etc/nexus/nexus.hcl" {
			t.Errorf("ENTRYPOINT's --config is %q, want /etc/nexus/nexus.hcl (where the ConfigMap is mounted)", cfg)
		}
		listen, _ := flag(argv, "listen")
		port := listenPort(t, "ENTRYPOINT --listen", listen, true)
		exposed := map[int]bool{}
		for _, e := range final.all("EXPOSE") {
			for _, f := range strings.Fields(e.args) {
				n, err := strconv.Atoi(strings.TrimSuffix(f, "/tcp"))
				if err != nil {
					t.Errorf("Dockerfile:%d: EXPOSE %s is not a port number", e.line, f)
				}
				exposed[n] = true
			}
		}
		if !exposed[port] {
			t.Errorf("ENTRYPOINT listens on port %d, which the Dockerfile does not EXPOSE", port)
		}
	})

	t.Run("Go release", func(t *testing.T) {
		// The builder's Go is at least the release go.mod's go line asks
		// for; an older one would fetch a toolchain (or fail offline).
		builder := d.stages[0].from
		m := regexp.MustCompile(`^(?:docker\.io/)?(?:library/)?golang:(\d+)\.(\d+)`).FindStringSubmatch(builder)
		if m == nil {
			t.Fatalf("the build stage is FROM %s; want golang:MAJOR.MINOR...", builder)
		}
		gomod, err := os.ReadFile("../go.mod")
		if err != nil {
			t.Fatal(err)
		}
		g := regexp.MustCompile(`(?m)^go (\d+)\.(\d+)`).FindStringSubmatch(string(gomod))
		if g == nil {
			t.Fatal("../go.mod has no go line")
		}
		have := [2]int{atoi(m[1]), atoi(m[2])}
		want := [2]int{atoi(g[1]), atoi(g[2])}
		if have[0] < want[0] || have[0] == want[0] && have[1] < want[1] {
			t.Errorf("the build stage is FROM %s, older than go.mod's go %s.%s", builder, g[1], g[2])
		}
	})
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// TestDockerignore checks that the build context leaves out only what git
// ignores: a tracked file left out would break the build or stamp the
// binary +dirty; bin/ and node_modules (hundreds of MB) must stay out.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(dockerignorePath)
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.Contains(l, "**") {
			t.Fatalf("%s: pattern %q: this test knows plain path.Match patterns only", dockerignorePath, l)
		}
		patterns = append(patterns, strings.Trim(path.Clean(l), "/"))
	}
	ignored := func(p string) string {
		// A pattern matches a path or any folder above it, as Docker's do.
		for _, pat := range patterns {
			for q := p; q != "." && q != "/"; q = path.Dir(q) {
				if ok, _ := path.Match(pat, q); ok {
					return pat
				}
			}
		}
		return ""
	}
	for _, big := range []string{"bin/nexus", "tools/npm/node_modules/x/package.json"} {
		if ignored(big) == "" {
			t.Errorf("%s does not leave out %s", dockerignorePath, big)
		}
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: cannot list the tracked files")
	}
	cmd := exec.Command(git, "ls-files", "-z")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout?)", err)
	}
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		if pat := ignored(f); pat != "" {
			t.Errorf("%s: pattern %q leaves the tracked file %s out of the build context", dockerignorePath, pat, f)
		}
	}
	for _, need := range []string{"go.mod", "go.sum", "cmd/nexus/main.go", ".git/HEAD"} {
		if pat := ignored(need); pat != "" {
			t.Errorf("%s: pattern %q leaves %s out of the build context", dockerignorePath, pat, need)
		}
	}
}
