package filtertest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/testenv"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// Dir is where built modules and the shared compilation cache live: one
// directory per user, reused across runs and test processes (every file is
// written to a temporary name and renamed into place). It is pruned once
// per process when it passes maxDirSize (see prune).
func Dir() string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("nexus-filtertest-%d", os.Getuid()))
	pruneOnce.Do(func() { prune(dir, maxDirSize, time.Hour) })
	return dir
}

// maxDirSize bounds Dir: every checkout path and every module version adds
// files (14 MB per compiled Go filter), which would otherwise pile up.
const maxDirSize = 1 << 30

var pruneOnce sync.Once

// prune deletes the files of dir last written more than minAge ago, when
// dir holds more than max bytes. Younger files may belong to a test run in
// progress in another process, so they stay.
func prune(dir string, max int64, minAge time.Duration) {
	type entry struct {
		path string
		mod  time.Time
	}
	var total int64
	var files []entry
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
			files = append(files, entry{path, info.ModTime()})
		}
		return nil
	})
	if total <= max {
		return
	}
	cutoff := time.Now().Add(-minAge)
	for _, f := range files {
		if f.mod.Before(cutoff) {
			os.Remove(f.path)
		}
	}
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// Build compiles the Go filter package in dir (GOOS=wasip1 GOARCH=wasm,
// -buildmode=c-shared) once per test process and returns the module's
// path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	return build(t, dir, true)
}

// BuildNative compiles the filter package in dir for this machine: a
// process that serves events on stdin (see filter.Main).
func BuildNative(t testing.TB, dir string) string {
	t.Helper()
	return build(t, dir, false)
}

func build(t testing.TB, dir string, wasip1 bool) string {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(abs) // the module's name is the filter's default name
	args := []string{"-trimpath"}
	var env []string
	if wasip1 {
		name += ".wasm"
		args = append(args, "-buildmode=c-shared")
		env = []string{"GOOS=wasip1", "GOARCH=wasm"}
	}
	// One link for every test process of the checkout (testenv.Build).
	out, err := testenv.Build(abs, ".", name, args, env)
	if err != nil {
		t.Fatalf("building %s: %v", dir, err)
	}
	return out
}

// BuildRego compiles Rego source with the OPA compiler (opa build -t wasm,
// from testenv.OPA) and the entrypoints, once per test process for the
// same source, and returns the bundle's path.
func BuildRego(t testing.TB, src string, entrypoints ...string) string {
	t.Helper()
	opa := testenv.OPA(t)
	key := "rego|" + src + "|" + strings.Join(entrypoints, ",")
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[key]; ok {
		return p
	}
	sum := sha256.Sum256([]byte(key))
	dir := filepath.Join(Dir(), "rego", hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	if err := os.WriteFile(filepath.Join(work, "policy.rego"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"build", "-t", "wasm", "-o", "bundle.tar.gz"}
	for _, e := range entrypoints {
		args = append(args, "-e", e)
	}
	cmd := exec.Command(opa, append(args, "policy.rego")...)
	cmd.Dir = work
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opa build: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "bundle.tar.gz")
	if err := os.Rename(filepath.Join(work, "bundle.tar.gz"), out); err != nil {
		t.Fatal(err)
	}
	built[key] = out
	return out
}

// Runtime makes a Runtime that shares the test compilation cache, closed
// when the test ends. opts.CacheDir defaults to that cache.
func Runtime(t testing.TB, opts wasm.Options) *wasm.Runtime {
	t.Helper()
	if opts.CacheDir == "" && !opts.NoCache {
		opts.CacheDir = filepath.Join(Dir(), "cache")
	}
	rt, err := wasm.NewRuntime(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// Spec is how Load loads a module: what a filter block of a config says
// of it.
type Spec struct {
	Name       string          // the block's name; the module's file name when ""
	Config     json.RawMessage // the block's config; none when nil
	Entrypoint string          // a Rego bundle's entrypoint (BuildRego's)
	Session    string          // the session id the filter sees; a random one when ""
}

// Filter is a module loaded in the runtime Nexus uses: Handle decides an
// event as the host's chain has it decided.
type Filter interface {
	Handler
	// Close frees the module's instances; Load closes it when the test
	// ends in any case.
	Close(ctx context.Context) error
}

// Load loads the module at path (from Build or BuildRego) as Nexus loads
// a filter block, in a runtime of its own with the host's default limits
// and the test compilation cache, with one instance (a test calls from
// one goroutine); it is closed when the test ends. A config the filter
// refuses fails here: the error is the report the host shows, whose
// message has the filter's own words.
func Load(t testing.TB, path string, s Spec) (Filter, error) {
	t.Helper()
	rt := Runtime(t, wasm.Options{Session: s.Session})
	name := s.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), ".wasm")
	}
	f, err := rt.Load(context.Background(), wasm.Spec{Name: name, Path: path, Config: s.Config, Entrypoint: s.Entrypoint, Pool: 1})
	if err != nil {
		return nil, explain.Error(err)
	}
	t.Cleanup(func() { f.Close(context.Background()) })
	return f, nil
}

// Suite is a set of cases run against one config of a filter.
type Suite struct {
	Name    string          `json:"name"`
	Config  json.RawMessage `json:"config"`
	Session string          `json:"session"`
	Cases   []Case          `json:"cases"`
}

// Case is one event and what the filter must decide.
type Case struct {
	Name  string          `json:"name"`
	Event json.RawMessage `json:"event"`
	Want  Want            `json:"want"`
}

// Want is the expected decision. Reason, Contains and Excludes are
// substrings (of the reason, and of the params or result); Params and
// Result, when set, must equal the decision's as JSON values.
type Want struct {
	Action   string          `json:"action"`
	Reason   string          `json:"reason"`
	Params   json.RawMessage `json:"params"`
	Result   json.RawMessage `json:"result"`
	Contains []string        `json:"contains"`
	Excludes []string        `json:"excludes"`
}

// LoadCases reads a filter's testdata/cases.json.
func LoadCases(t testing.TB, path string) []Suite {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var suites []Suite
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&suites); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return suites
}

// Event decodes the case's event.
func (c Case) Decode(t testing.TB) *event.Event {
	t.Helper()
	e := new(event.Event)
	if err := json.Unmarshal(c.Event, e); err != nil {
		t.Fatalf("case %s: event: %v", c.Name, err)
	}
	return e
}

// Check compares a decision with the case's Want.
func (c Case) Check(t testing.TB, d event.Decision) {
	t.Helper()
	w := c.Want
	if d.Action != w.Action {
		t.Errorf("%s: action %q (reason %q), want %q", c.Name, d.Action, d.Reason, w.Action)
		return
	}
	if w.Reason != "" && !strings.Contains(d.Reason, w.Reason) {
		t.Errorf("%s: reason %q does not contain %q", c.Name, d.Reason, w.Reason)
	}
	if w.Params != nil && !EqualJSON(d.Params, w.Params) {
		t.Errorf("%s: params\n got %s\nwant %s", c.Name, d.Params, w.Params)
	}
	if w.Result != nil && !EqualJSON(d.Result, w.Result) {
		t.Errorf("%s: result\n got %s\nwant %s", c.Name, d.Result, w.Result)
	}
	body := string(d.Params) + string(d.Result)
	for _, s := range w.Contains {
		if !strings.Contains(body, s) {
			t.Errorf("%s: %s does not contain %q", c.Name, body, s)
		}
	}
	for _, s := range w.Excludes {
		if strings.Contains(body, s) {
			t.Errorf("%s: %s contains %q", c.Name, body, s)
		}
	}
}

// EqualJSON reports whether a and b are the same JSON value.
func EqualJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

// DecodeDecision decodes a decision JSON as the SDK writes it.
func DecodeDecision(t testing.TB, b []byte) event.Decision {
	t.Helper()
	var d event.Decision
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("decision %s: %v", b, err)
	}
	return d
}

// RunWASM runs every suite of a filter's cases.json through the runtime
// Nexus uses, with its default limits: the module at wasmPath (Build makes
// it), loaded once per suite with its config, as a filter block named name.
func RunWASM(t *testing.T, name, wasmPath, casesPath string) {
	t.Helper()
	RunSuites(t, Runtime(t, wasm.Options{}), name, wasmPath, casesPath)
}

// RunSuites runs every suite of a filter's cases.json through the real
// runtime: the module at wasmPath, loaded once per suite with its config.
func RunSuites(t *testing.T, rt *wasm.Runtime, name, wasmPath, casesPath string) {
	for _, s := range LoadCases(t, casesPath) {
		t.Run(s.Name, func(t *testing.T) {
			r := rt
			if s.Session != "" {
				r = Runtime(t, wasm.Options{Session: s.Session})
			}
			f, err := r.Load(context.Background(), wasm.Spec{Name: name, Path: wasmPath, Config: s.Config, Pool: 1})
			if err != nil {
				t.Fatal(explain.Error(err)) // the report the host shows
			}
			RunCases(t, f, s.Cases)
		})
	}
}

// Handler decides events: a WASM filter, a CEL rule, a plugin's link.
type Handler interface {
	Handle(ctx context.Context, e *event.Event) (event.Decision, error)
}

// RunCases decides every case with h and checks each decision.
func RunCases(t testing.TB, h Handler, cases []Case) {
	t.Helper()
	for _, c := range cases {
		d, err := h.Handle(context.Background(), c.Decode(t))
		if err != nil {
			t.Errorf("%s: %v", c.Name, err)
			continue
		}
		c.Check(t, d)
	}
}

// Pipe is a natively built filter running as a process, spoken to over
// its stdin and stdout (see filter.Main).
type Pipe struct {
	cmd *exec.Cmd
	w   io.WriteCloser
	r   *bufio.Reader
	buf []byte
}

// StartPipe starts bin (from BuildNative) with config; it is stopped when
// the test ends.
func StartPipe(t testing.TB, bin string, config []byte) *Pipe {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "NEXUS_FILTER_PIPE=1")
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Pipe{cmd: cmd, w: w, r: bufio.NewReader(r)}
	t.Cleanup(func() { w.Close(); cmd.Wait() })
	if config == nil {
		config = []byte("null")
	}
	reply, err := p.Call(config)
	if err != nil || string(reply) != "ok" {
		t.Fatalf("configuring %s: %s %v", bin, reply, err)
	}
	return p
}

// CallEvent sends e, encoded for this call as a host sending it out of
// process would, and returns the decision's bytes: the out-of-process
// baseline does the encoding the WASM call does.
func (p *Pipe) CallEvent(e *event.Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return p.Call(b)
}

// Call sends one frame and returns the answer, valid until the next call.
func (p *Pipe) Call(frame []byte) ([]byte, error) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(frame)))
	if _, err := p.w.Write(append(hdr[:], frame...)); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(p.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if cap(p.buf) < int(n) {
		p.buf = make([]byte, n)
	}
	p.buf = p.buf[:n]
	_, err := io.ReadFull(p.r, p.buf)
	return p.buf, err
}
