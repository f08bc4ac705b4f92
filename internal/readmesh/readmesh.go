package readmesh

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Shell runs the few commands the README blocks use: NAME=value
// assignments, cd, cp -r, rm, go (with NAME=value before it for its
// environment), sha256sum, and nexus, which it logs without running (it
// needs an installed nexus). Commands are joined by && or lines; words
// are split and quoted as sh does, with $NAME and ${NAME} expanded. Any
// other command or shell syntax fails the test, so the README keeps to
// what is checked here.
type Shell struct {
	t      *testing.T
	ctx    context.Context
	goBin  string
	Dir    string // where the blocks ran (a new temporary folder)
	vars   map[string]string
	env    []string
	Builds []Build
}

// Build is a binary or module the blocks built.
type Build struct {
	Path string
	WASM bool // built with GOOS=wasip1
}

// New starts in a new temporary folder, outside the repository, with
// NEXUS set to the checkout this test runs in. It honours the environment
// (GOFLAGS, GOPROXY, GOMODCACHE, GOCACHE...) except for two things the
// README tells readers to leave unset: GOWORK, which would replace the
// go.work the README creates, and -mod=mod in GOFLAGS, which a workspace
// refuses.
func New(t *testing.T) *Shell {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module github.com/nexus-mcp/nexus\n") {
		t.Fatalf("%s holds no go.mod of module github.com/nexus-mcp/nexus: readmesh runs from a package two folders below the repository root", root)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOWORK":
			continue
		case "GOFLAGS":
			kv = "GOFLAGS=" + strings.Join(slices.DeleteFunc(strings.Fields(v), func(f string) bool {
				return f == "-mod=mod"
			}), " ")
		}
		env = append(env, kv)
	}
	ctx := t.Context()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
		t.Cleanup(cancel)
	}
	return &Shell{t: t, ctx: ctx, goBin: goBin, Dir: t.TempDir(), vars: map[string]string{"NEXUS": root}, env: env}
}

// RunREADME runs every ```sh block that follows a line holding only
// <!-- outside-test -->, in order, line by line, in one shell.
func (s *Shell) RunREADME(path string) {
	s.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	blocks := 0
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "<!-- outside-test -->" {
			continue
		}
		if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) != "```sh" {
			s.t.Fatalf("%s:%d: <!-- outside-test --> must come just before a ```sh block", path, i+1)
		}
		blocks++
		for i += 2; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			for _, words := range s.parse(lines[i]) {
				s.exec(lines[i], words)
			}
		}
	}
	if blocks == 0 {
		s.t.Fatalf("%s has no block marked <!-- outside-test -->", path)
	}
}

// parse splits one line into commands (joined by &&) of words.
func (s *Shell) parse(line string) [][]string {
	var cmds [][]string
	var words []string
	var w strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	bad := func(what string) { s.t.Fatalf("README line %q: %s is not supported by readmesh", line, what) }
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			endWord()
		case c == '#' && !inWord:
			i = len(line)
		case strings.HasPrefix(line[i:], "&&"):
			endWord()
			if len(words) == 0 {
				bad("an empty command")
			}
			cmds, words = append(cmds, words), nil
			i++
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				bad("an unclosed quote")
			}
			w.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(line) {
					bad("an unclosed quote")
				}
				if line[i] == '"' {
					break
				}
				if strings.IndexByte("\\`", line[i]) >= 0 {
					bad(string(line[i]) + " in double quotes")
				}
				if line[i] == '$' {
					i += s.expand(line[i:], &w, bad) - 1
					continue
				}
				w.WriteByte(line[i])
			}
		case c == '$':
			inWord = true
			i += s.expand(line[i:], &w, bad) - 1
		case strings.IndexByte("|;&<>()`\\*?[{!", c) >= 0 || c == '~' && !inWord:
			bad(string(c))
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	endWord()
	if len(words) > 0 {
		cmds = append(cmds, words)
	} else if len(cmds) > 0 {
		bad("a trailing &&")
	}
	return cmds
}

// expand writes the value of the variable that text starts with ($NAME
// or ${NAME}) and returns the length of the reference.
func (s *Shell) expand(text string, w *strings.Builder, bad func(string)) int {
	name, n := "", 0
	if strings.HasPrefix(text, "${") {
		j := strings.IndexByte(text, '}')
		if j < 0 {
			bad("an unclosed ${")
		}
		name, n = text[2:j], j+1
	} else {
		n = 1
		for n < len(text) && (text[n] == '_' || 'a' <= text[n] && text[n] <= 'z' ||
			'A' <= text[n] && text[n] <= 'Z' || n > 1 && '0' <= text[n] && text[n] <= '9') {
			n++
		}
		name = text[1:n]
	}
	v, ok := s.vars[name]
	if !ok {
		bad("$" + name + " (unset)")
	}
	w.WriteString(v)
	return n
}

func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

func (s *Shell) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(s.Dir, p)
}

func (s *Shell) exec(line string, words []string) {
	t := s.t
	t.Helper()
	var assign []string
	for len(words) > 0 && isAssignment(words[0]) {
		assign, words = append(assign, words[0]), words[1:]
	}
	if len(words) == 0 {
		for _, a := range assign {
			k, v, _ := strings.Cut(a, "=")
			s.vars[k] = v
		}
		return
	}
	if len(assign) > 0 && words[0] != "go" {
		t.Fatalf("README line %q: NAME=value before %s is not supported by readmesh", line, words[0])
	}
	args := words[1:]
	switch words[0] {
	case "cd":
		if len(args) != 1 {
			t.Fatalf("README line %q: cd takes one folder", line)
		}
		dir := s.path(args[0])
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("README line %q: cd: %s is not a folder", line, dir)
		}
		s.Dir = dir
	case "cp":
		if len(args) != 3 || args[0] != "-r" {
			t.Fatalf("README line %q: only cp -r FROM TO is supported", line)
		}
		copyTree(t, line, s.path(args[1]), s.path(args[2]))
	case "rm":
		for _, a := range args {
			if err := os.Remove(s.path(a)); err != nil {
				t.Fatalf("README line %q: %v", line, err)
			}
		}
	case "sha256sum":
		for _, a := range args {
			b, err := os.ReadFile(s.path(a))
			if err != nil {
				t.Fatalf("README line %q: %v", line, err)
			}
			sum := sha256.Sum256(b)
			t.Logf("$ %s\n%s  %s", line, hex.EncodeToString(sum[:]), a)
		}
	case "nexus":
		t.Logf("$ %s\n(not run here: it needs an installed nexus)", line)
	case "go":
		cmd := exec.CommandContext(s.ctx, s.goBin, args...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = s.Dir, append(slices.Clone(s.env), assign...), 10*time.Second
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("README line %q in %s: %v\n%s", line, s.Dir, err, out)
		}
		t.Logf("$ %s  (%v)", line, time.Since(start).Round(time.Millisecond))
		if len(args) > 0 && args[0] == "build" {
			for i, a := range args {
				o, ok := strings.CutPrefix(a, "-o=")
				if a == "-o" && i+1 < len(args) {
					o, ok = args[i+1], true
				}
				if ok {
					s.Builds = append(s.Builds, Build{Path: s.path(o), WASM: slices.Contains(assign, "GOOS=wasip1")})
				}
			}
		}
	default:
		t.Fatalf("README line %q: readmesh does not run %s", line, words[0])
	}
}

// copyTree is cp -r: into to/<base of from> when to is a folder, else to
// to, whose parent must exist.
func copyTree(t *testing.T, line, from, to string) {
	t.Helper()
	if fi, err := os.Stat(to); err == nil && fi.IsDir() {
		to = filepath.Join(to, filepath.Base(from))
	} else if _, err := os.Stat(filepath.Dir(to)); err != nil {
		t.Fatalf("README line %q: %v", line, err)
	}
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file or folder", p)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("README line %q: %v", line, err)
	}
}
