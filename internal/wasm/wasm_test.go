package wasm_test

//go:generate sh -c "cd testdata && for f in *.wat; do wat2wasm $f -o ${f%.wat}.wasm; done"

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/explain"
	abi "github.com/nexus-mcp/nexus/internal/filterabi"
	"github.com/nexus-mcp/nexus/internal/policy"
	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter/filtertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/wasm -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}

func toolCall() *event.Event {
	return &event.Event{ABI: event.ABI, Phase: event.PhaseRequest, Method: "tools/call",
		Agent: event.Agent{ID: "cli", Permission: event.Trusted}, Server: event.Server{Name: "github"},
		Tool: &event.Tool{Name: "delete_repo"}, Params: json.RawMessage(`{"name":"delete_repo","arguments":{"repo":"x"}}`)}
}

func load(t testing.TB, rt *wasm.Runtime, spec wasm.Spec) *wasm.Filter {
	t.Helper()
	f, err := rt.Load(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestMinimal(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	f := load(t, rt, wasm.Spec{Path: "testdata/minimal.wasm"})
	if f.Name() != "minimal" {
		t.Errorf("name %q", f.Name())
	}
	d, err := f.Handle(context.Background(), toolCall())
	if err != nil || d.Action != event.Allow {
		t.Fatal(d, err)
	}
	info := f.Inspect()
	if info.ABI != "1.0" || info.Size != 239 || len(info.SHA256) != 64 || len(info.Exports) != 6 || len(info.Problems) != 0 {
		t.Fatalf("%+v", info)
	}
	// The example ABI.md shows grows its memory for a large input: an
	// event over 64 KiB is decided, not failed.
	big := toolCall()
	big.Params = json.RawMessage(`{"name":"x","arguments":{"blob":"` + strings.Repeat("a", 300<<10) + `"}}`)
	if d, err := f.Handle(context.Background(), big); err != nil || d.Action != event.Allow {
		t.Fatalf("a 300 KiB event: %v %v", d, err)
	}
}

// Every way a module can fail to load is a clear report.
func TestLoadErrors(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wat, _ := os.ReadFile("testdata/minimal.wat")
	cases := []struct {
		name   string
		spec   wasm.Spec
		is     error
		golden bool
		want   []string
	}{
		{"missing", wasm.Spec{Name: "gone", Path: "testdata/missing.wasm"}, wasm.ErrNotFound, true, nil},
		// A device has no end and says its size is 0: it is refused before
		// a byte is read (it was read until memory ran out).
		{"device", wasm.Spec{Path: "/dev/zero"}, wasm.ErrNotFound, false, []string{"/dev/zero is a device, not a file"}},
		{"directory", wasm.Spec{Path: "testdata"}, wasm.ErrNotFound, false, []string{"testdata is a directory, not a .wasm module"}},
		{"elf", wasm.Spec{Path: write("elf.wasm", []byte("\x7fELF\x02\x01\x01"))}, wasm.ErrNotWASM, false, []string{"ELF executable", "GOOS=wasip1"}},
		{"text", wasm.Spec{Path: write("text.wasm", []byte("hello"))}, wasm.ErrNotWASM, false, []string{"starts with 68 65 6c 6c", `\0asm`}},
		{"wat", wasm.Spec{Path: write("wat.wasm", wat)}, wasm.ErrNotWASM, false, []string{"WebAssembly text (WAT)"}},
		{"empty", wasm.Spec{Path: write("empty.wasm", nil)}, wasm.ErrNotWASM, false, []string{"empty"}},
		{"component", wasm.Spec{Path: write("component.wasm", []byte("\x00asm\x0d\x00\x01\x00"))}, wasm.ErrNotWASM, false, []string{"component"}},
		{"truncated", wasm.Spec{Path: write("truncated.wasm", func() []byte { b, _ := os.ReadFile("testdata/minimal.wasm"); return b[:40] }())}, wasm.ErrCompile, false, []string{"not a valid WebAssembly module"}},
		{"nomarker", wasm.Spec{Path: "testdata/nomarker.wasm"}, wasm.ErrABI, true, nil},
		{"abi2", wasm.Spec{Path: "testdata/abi2.wasm"}, wasm.ErrABI, false, []string{"built for filter ABI v2", "this Nexus speaks ABI v1"}},
		{"badsig", wasm.Spec{Path: "testdata/badsig.wasm", Source: diag.Source{File: "/etc/nexus/nexus.hcl", Layer: "global", Line: 12}}, wasm.ErrExports, true, nil},
		{"command", wasm.Spec{Path: "testdata/command.wasm"}, wasm.ErrExports, false, []string{"built as a command", "-buildmode=c-shared"}},
		{"sha256", wasm.Spec{Name: "pinned", Path: "testdata/minimal.wasm", SHA256: strings.Repeat("ab", 32)}, wasm.ErrSHA256, true, nil},
		{"bigmem", wasm.Spec{Path: "testdata/bigmem.wasm"}, wasm.ErrMemoryLimit, false, []string{"needs 64 MiB of memory to start, over its limit of 32 MiB", "memory_mb = 64"}},
		{"refused", wasm.Spec{Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"C"`)}, wasm.ErrConfigure, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := rt.Load(context.Background(), tc.spec)
			if !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			var le *wasm.LoadError
			if !errors.As(err, &le) || le.Filter == "" {
				t.Fatalf("no LoadError naming the filter: %#v", err)
			}
			text := explain.Error(err).Error() // the report a person reads
			if tc.golden {
				golden(t, "load_"+tc.name, text+"\n")
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("%q not in\n%s", w, text)
				}
			}
		})
	}
}

// A misbehaving filter fails the call with a clear error naming the
// filter, the event and the cause; the host keeps serving and replaces
// broken instances.
func TestMisbehaving(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{LogLimit: 32 << 10})
	cases := []struct {
		mode string
		is   error
		want string
	}{
		{"L", wasm.ErrTimeout, "timed out after 50ms (limits.timeout); the instance was stopped and discarded"},
		{"M", wasm.ErrMemoryLimit, "over its limit of 32 MiB (limits.memory_mb)"},
		{"T", wasm.ErrTrap, "trapped: wasm error: unreachable"},
		{"J", wasm.ErrBadDecision, `the decision is not JSON`},
		{"A", wasm.ErrBadDecision, `unknown action "maybe" (want allow, deny or modify)`},
		{"O", wasm.ErrOutputBounds, "past the end of its memory"},
		{"B", wasm.ErrOutputTooLarge, "the decision is 11 MiB, over the 10 MiB limit"},
		{"E", wasm.ErrFailed, "database unreachable"},
		{"Z", wasm.ErrBadDecision, "modify in the request phase carries no params"},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			timeout := 2 * time.Second // generous: only the loop should reach it
			if tc.mode == "L" {
				timeout = 50 * time.Millisecond
			}
			f := load(t, rt, wasm.Spec{Name: "bad-" + tc.mode, Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"` + tc.mode + `"`), Timeout: timeout, Pool: 1})
			for range 2 { // the second call runs on a fresh (or the same, sound) instance
				start := time.Now()
				_, err := f.Handle(context.Background(), toolCall())
				if time.Since(start) > 5*time.Second {
					t.Errorf("the call took %v", time.Since(start))
				}
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v\nwant %v: %s", err, tc.is, tc.want)
				}
				if !strings.HasPrefix(err.Error(), fmt.Sprintf(`wasm filter "bad-%s" on tools/call github.delete_repo (request): `, tc.mode)) {
					t.Fatalf("error does not name the filter and the event: %v", err)
				}
			}
		})
	}
	t.Run("deny", func(t *testing.T) {
		f := load(t, rt, wasm.Spec{Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"D"`)})
		d, err := f.Handle(context.Background(), toolCall())
		if err != nil || d.Action != event.Deny || d.Reason != "no" {
			t.Fatal(d, err)
		}
	})
	t.Run("stdout flood is capped", func(t *testing.T) {
		f := load(t, rt, wasm.Spec{Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"S"`)})
		res, err := f.Call(context.Background(), toolCall())
		if err != nil || res.Decision.Action != event.Allow {
			t.Fatal(res, err)
		}
		total := 0
		for _, l := range res.Log[:len(res.Log)-1] {
			total += len(l.Text)
		}
		last := res.Log[len(res.Log)-1].Text
		if total > 32<<10 || !strings.Contains(last, "output capped at 32.0 KiB per call: 5.0 MiB more dropped") {
			t.Fatalf("%d bytes kept, last line %q", total, last)
		}
	})
	t.Run("log levels", func(t *testing.T) {
		f := load(t, rt, wasm.Spec{Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"G"`)})
		res, err := f.Call(context.Background(), toolCall())
		if err != nil || len(res.Log) != 2 || res.Log[0] != (wasm.LogLine{Level: abi.LevelTrace, Stream: "log", Text: "a trace"}) || res.Log[1].Level != abi.LevelError {
			t.Fatal(res.Log, err)
		}
	})
}

func TestGoGuest(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{Session: "s-123"})
	mod := filtertest.Build(t, "testdata/goguest")
	mode := func(m string, timeout time.Duration) *wasm.Filter {
		return load(t, rt, wasm.Spec{Name: "go-" + m, Path: mod, Config: json.RawMessage(`{"mode":"` + m + `"}`), Timeout: timeout, Pool: 1})
	}
	t.Run("fields", func(t *testing.T) {
		yes := true
		e := toolCall()
		e.Tool.Annotations = &event.Annotations{DestructiveHint: &yes}
		res, err := mode("fields", 0).Call(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"agent":"cli","destructive":true,"hasTool":true,"method":"tools/call","params":"{\"name\":\"delete_repo\",\"arguments\":{\"repo\":\"x\"}}","permission":"trusted","phase":"request","result":"","server":"github","session":"s-123","texts":null,"tool":"delete_repo"}`
		if res.Decision.Reason != want {
			t.Fatalf("got  %s\nwant %s", res.Decision.Reason, want)
		}
		if len(res.Log) != 2 || res.Log[0].Text != "fields read" || res.Log[1] != (wasm.LogLine{Level: abi.LevelInfo, Stream: "stdout", Text: "to stdout"}) {
			t.Fatalf("log %+v", res.Log)
		}
		// The response phase: the result and its text items, through
		// content_text; long texts take the guest's retry with a larger buffer.
		long := strings.Repeat("y", 1000)
		e = &event.Event{Phase: event.PhaseResponse, Method: "tools/call", Server: event.Server{Name: "s"},
			Result: json.RawMessage(`{"content":[{"type":"text","text":"one"},{"type":"image","data":"AA=="},{"type":"text","text":"` + long + `"}]}`)}
		d, err := mode("fields", 0).Handle(context.Background(), e)
		var got struct{ Texts []string }
		if err != nil || json.Unmarshal([]byte(d.Reason), &got) != nil || len(got.Texts) != 2 || got.Texts[0] != "0:one" || got.Texts[1] != "2:"+long {
			t.Fatal(d.Reason, err)
		}
	})
	t.Run("full event", func(t *testing.T) {
		e := toolCall()
		d, err := mode("full", 0).Handle(context.Background(), e)
		want, _ := json.Marshal(e)
		if err != nil || d.Reason != string(want) {
			t.Fatalf("got  %s\nwant %s\n%v", d.Reason, want, err)
		}
	})
	t.Run("listing", func(t *testing.T) {
		// ABI 1.1: a tools/list event's definition and listing come through
		// the field host function, and a decision's flags come back.
		f := mode("listing", 0)
		listing := &event.Listing{ID: "gen-7", Tools: []event.ListedTool{{Server: "a", Name: "x"}, {Server: "b", Name: "y"}, {Server: "c", Name: "bad\tname"}}}
		e := &event.Event{Method: "tools/list", Server: event.Server{Name: "a"},
			Tool: &event.Tool{Name: "x", Definition: json.RawMessage(`{"name":"x","description":"fine"}`)}, Listing: listing}
		d, err := f.Handle(context.Background(), e)
		want := []string{`definition {"name":"x","description":"fine"}`, "listing a\tx\nb\ty\n", "id gen-7"}
		if err != nil || d.Action != event.Allow || !reflect.DeepEqual(d.Flags, want) {
			t.Fatalf("%+v %v", d, err)
		}
		e.Tool.Definition = json.RawMessage(`{"name":"x","description":"withhold me"}`)
		if d, err := f.Handle(context.Background(), e); err != nil || d.Action != event.Deny || d.Reason != "withheld" || len(d.Flags) != 3 {
			t.Fatalf("%+v %v", d, err)
		}
		// Without them (a tools/call), the fields are absent.
		if d, err := f.Handle(context.Background(), toolCall()); err != nil || !reflect.DeepEqual(d.Flags, []string{"definition ", "listing ", "id "}) {
			t.Fatalf("%+v %v", d, err)
		}
	})
	t.Run("modify", func(t *testing.T) {
		d, err := mode("modify", 0).Handle(context.Background(), toolCall())
		if err != nil || d.Action != event.Modify || string(d.Params) != `{"name":"echo","arguments":{"message":"changed"}}` {
			t.Fatal(d, err)
		}
	})
	for _, tc := range []struct {
		mode    string
		timeout time.Duration
		is      error
		want    string
	}{
		{"panic", 0, wasm.ErrFailed, "filter failed: panic: boom"},
		{"exit", 0, wasm.ErrExit, "exited with code 3"},
		{"bomb", 2 * time.Second, wasm.ErrMemoryLimit, "over its limit of 32 MiB"},
		{"sleep", 100 * time.Millisecond, wasm.ErrTimeout, "timed out after 100ms"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			f := mode(tc.mode, tc.timeout)
			for range 2 {
				_, err := f.Handle(context.Background(), toolCall())
				if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v\nwant %v: %s", err, tc.is, tc.want)
				}
			}
		})
	}
	t.Run("stdout", func(t *testing.T) {
		res, err := mode("stdout", time.Second).Call(context.Background(), toolCall())
		if err != nil || res.Decision.Action != event.Allow || !strings.Contains(res.Log[len(res.Log)-1].Text, "more dropped") {
			t.Fatal(err, len(res.Log))
		}
	})
	t.Run("refused config", func(t *testing.T) {
		_, err := rt.Load(context.Background(), wasm.Spec{Path: mod, Config: json.RawMessage(`{"mode":"refuse"}`)})
		if !errors.Is(err, wasm.ErrConfigure) || !strings.Contains(explain.Error(err).Error(), `the filter refused its config: mode "refuse": this filter refuses its config`) {
			t.Fatal(err)
		}
		_, err = rt.Load(context.Background(), wasm.Spec{Path: mod, Config: json.RawMessage(`{"mood":"x"}`)})
		if !errors.Is(err, wasm.ErrConfigure) || !strings.Contains(err.Error(), `unknown field "mood"`) {
			t.Fatal(err)
		}
	})
}

// Policies fail closed, sanitizers withhold, unless on_error says
// otherwise; the chain's errors name the filter and the cause.
func TestChain(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	ctx := context.Background()
	entry := func(kind, onError, mode string) policy.Entry {
		en, err := wasm.Entry(ctx, rt, &config.Filter{Name: "trap-" + kind, Kind: kind, OnError: onError,
			WASM: "testdata/misbehave.wasm", Config: map[string]any{"x": 1}, Match: []config.Match{{Servers: []string{"git*"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if mode != "" { // the config above is not a string: replace the link with one that misbehaves
			en.Link = load(t, rt, wasm.Spec{Name: "trap-" + kind, Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"` + mode + `"`)})
		}
		return en
	}
	_, err := policy.NewChain(entry("policy", "deny", "T")).Request(ctx, toolCall())
	var de *policy.DeniedError
	if !errors.As(err, &de) || !errors.Is(err, wasm.ErrTrap) || !strings.Contains(err.Error(), `github.delete_repo denied: policy "trap-policy" failed and fails closed: wasm filter "trap-policy" on tools/call github.delete_repo (request): trapped`) {
		t.Fatal(err)
	}
	if _, err := policy.NewChain(entry("policy", "allow", "T")).Request(ctx, toolCall()); err != nil {
		t.Fatal(err)
	}
	resp := toolCall()
	resp.Result = json.RawMessage(`{"content":[]}`)
	_, err = policy.NewChain(entry("sanitizer", "deny", "T")).Response(ctx, resp)
	var we *policy.WithheldError
	if !errors.As(err, &we) {
		t.Fatal(err)
	}
	if r, err := policy.NewChain(entry("sanitizer", "allow", "T")).Response(ctx, resp); err != nil || string(r) != `{"content":[]}` {
		t.Fatal(err)
	}
	_, err = policy.NewChain(entry("policy", "", "D")).Request(ctx, toolCall())
	if !errors.As(err, &de) || de.Link != "trap-policy" || de.Reason != "no" {
		t.Fatal(err)
	}
	// The match block keeps the filter off other servers.
	other := toolCall()
	other.Server.Name = "gitlab-not"
	other.Server.Name = "jira"
	if _, err := policy.NewChain(entry("policy", "", "T")).Request(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := wasm.Entry(ctx, rt, &config.Filter{Name: "p", Plugin: "x"}); err == nil {
		t.Fatal("a plugin filter loaded as WASM")
	}
}

func TestEntryFromConfig(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	en, err := wasm.Entry(context.Background(), rt, &config.Filter{Name: "m", Kind: "sanitizer", OnError: "allow", WASM: "testdata/minimal.wasm",
		Limits: config.Limits{MemoryMB: 4, Timeout: time.Second, Pool: 3}})
	if err != nil {
		t.Fatal(err)
	}
	spec := en.Link.(*wasm.Filter).Spec()
	if en.Kind != policy.KindSanitizer || en.OnError != policy.OnErrorPass || spec.MemoryMB != 4 || spec.Timeout != time.Second || spec.Pool != 3 || spec.MaxCalls != wasm.DefaultMaxCalls {
		t.Fatalf("%+v %+v", en, spec)
	}
}

// Many goroutines share a small pool; instances are recycled after
// MaxCalls and replaced after failures. The per-call limit is a minute,
// not the 100 ms default: it is not what is tested, and one of 400 calls
// stalled by a loaded machine would fail the test.
func TestPool(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	f := load(t, rt, wasm.Spec{Path: filtertest.Build(t, "testdata/goguest"), Config: json.RawMessage(`{"mode":"allow"}`), Pool: 2, MaxCalls: 7, Timeout: time.Minute})
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				d, err := f.Handle(context.Background(), toolCall())
				if err == nil && d.Action != event.Allow {
					err = fmt.Errorf("decision %+v", d)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A caller whose context ends while it waits for an instance gets the
	// context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Handle(ctx, toolCall()); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestCacheAndClose(t *testing.T) {
	dir := t.TempDir()
	rt := filtertest.Runtime(t, wasm.Options{CacheDir: dir})
	if rt.CacheDir() != dir {
		t.Fatal(rt.CacheDir())
	}
	f := load(t, rt, wasm.Spec{Path: "testdata/minimal.wasm"})
	entries, _ := os.ReadDir(dir)
	if len(entries) == 0 {
		t.Fatal("nothing cached")
	}
	if err := rt.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Handle(context.Background(), toolCall()); !errors.Is(err, wasm.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := rt.Load(context.Background(), wasm.Spec{Path: "testdata/minimal.wasm"}); !errors.Is(err, wasm.ErrClosed) {
		t.Fatal(err)
	}
}

func TestInspect(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	info, err := rt.Inspect(context.Background(), wasm.Spec{Path: "testdata/badsig.wasm"})
	if err != nil {
		t.Fatal(err)
	}
	if info.ABI != "" || len(info.Problems) != 6 || len(info.Imports) != 3 {
		t.Fatalf("%+v", info)
	}
	info, err = rt.Inspect(context.Background(), wasm.Spec{Path: "testdata/misbehave.wasm"})
	if err != nil || info.ABI != "1.0" || len(info.Problems) != 0 || info.MemoryMin != 4 {
		t.Fatalf("%+v %v", info, err)
	}
}

// Closing a runtime while filters load (a CLI that fails fast while its
// chain loads in the background) waits for the loads: closing the
// compilation cache under a module being instantiated crashed wazero.
func TestCloseDuringLoad(t *testing.T) {
	mod := filtertest.Build(t, "../../filters/tool-allowlist")
	cacheDir := t.TempDir()
	for i := range 10 {
		rt, err := wasm.NewRuntime(context.Background(), wasm.Options{CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := rt.Load(context.Background(), wasm.Spec{Path: mod, Config: json.RawMessage(`{"allow": ["a.b"]}`)})
				if err == nil {
					f.Handle(context.Background(), toolCall())
				} else if !errors.Is(err, wasm.ErrClosed) && !strings.Contains(err.Error(), "closed") {
					t.Errorf("round %d: %v", i, err)
				}
			}()
		}
		if i%2 == 1 {
			time.Sleep(time.Duration(i) * time.Millisecond)
		}
		if err := rt.Close(context.Background()); err != nil {
			t.Errorf("round %d: close: %v", i, err)
		}
		wg.Wait()
	}
}

// Loads of one module racing each other on a runtime whose file cache
// already holds it: wazero publishes a module read from the cache before
// it is ready, so unserialized compilations crashed.
func TestConcurrentLoadsFromCache(t *testing.T) {
	mod := filtertest.Build(t, "../../filters/tool-allowlist")
	cacheDir := t.TempDir()
	warm, err := wasm.NewRuntime(context.Background(), wasm.Options{CacheDir: cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.Load(context.Background(), wasm.Spec{Path: mod, Config: json.RawMessage(`{"allow": ["a.b"]}`)}); err != nil {
		t.Fatal(err)
	}
	warm.Close(context.Background())
	for i := range 3 {
		rt, err := wasm.NewRuntime(context.Background(), wasm.Options{CacheDir: cacheDir})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := rt.Load(context.Background(), wasm.Spec{Path: mod, Config: json.RawMessage(`{"allow": ["a.b"]}`)})
				if err != nil {
					t.Errorf("round %d: %v", i, err)
					return
				}
				if _, err := f.Handle(context.Background(), toolCall()); err != nil {
					t.Errorf("round %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		rt.Close(context.Background())
	}
}

// TestYields: the Go SDK guest and a Rego policy run with the host's own
// loop checks (internal/wasm/interrupt.go), not wazero's slower ones; a guest
// that loops forever is still stopped by its deadline (TestMisbehaving).
func TestYields(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	for name, spec := range map[string]wasm.Spec{
		"go":   {Path: filtertest.Build(t, "testdata/goguest"), Config: json.RawMessage(`{"mode":"allow"}`)},
		"rego": {Path: filtertest.BuildRego(t, "package p\nimport rego.v1\nallow if input.server.name in data.ok\n", "p/allow"), Config: json.RawMessage(`{"ok":["github"]}`)},
	} {
		f := load(t, rt, spec)
		if !wasm.Yields(f) {
			t.Errorf("%s: the module runs with wazero's loop checks", name)
		}
		if d, err := f.Handle(context.Background(), toolCall()); err != nil || d.Action != event.Allow {
			t.Errorf("%s: %+v %v", name, d, err)
		}
	}
}

// TestLoopingGuestLetsGCRun: a guest in a loop with no end yields to Go's
// runtime, so a collection (which stops every goroutine) completes while
// it runs, and its deadline still stops it. Machine code that never left
// for Go would hold the collection, and with it the timer that ends the
// call, forever.
func TestLoopingGuestLetsGCRun(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	f := load(t, rt, wasm.Spec{Name: "loop", Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"L"`), Timeout: 300 * time.Millisecond, Pool: 1})
	if !wasm.Yields(f) {
		t.Fatal("the test module runs with wazero's checks: this test would not test the host's")
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.Handle(context.Background(), toolCall())
		done <- err
	}()
	gcs := make(chan struct{})
	go func() {
		for range 20 {
			runtime.GC()
		}
		close(gcs)
	}()
	select {
	case err := <-done:
		if !errors.Is(err, wasm.ErrTimeout) {
			t.Fatalf("got %v, want a timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the looping call did not end")
	}
	select {
	case <-gcs:
	case <-time.After(time.Minute):
		t.Fatal("collections did not finish")
	}
}

// TestCloseStopsCallInFlight: closing a filter ends a call that loops,
// long before its own deadline.
func TestCloseStopsCallInFlight(t *testing.T) {
	rt := filtertest.Runtime(t, wasm.Options{})
	f := load(t, rt, wasm.Spec{Name: "loop", Path: "testdata/misbehave.wasm", Config: json.RawMessage(`"L"`), Timeout: time.Hour, Pool: 1})
	done := make(chan error, 1)
	go func() {
		_, err := f.Handle(context.Background(), toolCall())
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the call start looping; if it has not, Close refuses it, which passes too
	if err := f.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, wasm.ErrClosed) {
			t.Fatalf("got %v, want ErrClosed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the call in flight did not end when the filter closed")
	}
}
