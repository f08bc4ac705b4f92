package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func open(t testing.TB, o Options) *Writer {
	t.Helper()
	w, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func rec(i int) Record {
	return Record{Time: time.Unix(1_800_000_000, int64(i)).UTC(), Agent: "claude", Server: "github", Method: "tools/call",
		Tool: "get_issue", Decision: "allow", Steps: []Step{{Link: "permission", Action: "allow", Micros: 1.5}}, ArgsSHA256: fmt.Sprintf("%064x", i)}
}

func writeN(t testing.TB, w *Writer, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := w.Write(rec(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func lines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Records come back as written, chained: seq from 1, each prev the hash of
// the line before, a genesis on the first line only.
func TestWriteVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path})
	writeN(t, w, 0, 50)
	ls := lines(t, path)
	if len(ls) != 50 {
		t.Fatalf("%d lines", len(ls))
	}
	var first, second Record
	json.Unmarshal([]byte(ls[0]), &first)
	json.Unmarshal([]byte(ls[1]), &second)
	if first.Seq != 1 || first.Genesis == "" || first.Prev != plain([]byte(first.Genesis)) || second.Genesis != "" || second.Prev != plain([]byte(ls[0])) {
		t.Fatalf("chain: %+v / %+v", first, second)
	}
	if first.Agent != "claude" || first.Tool != "get_issue" || first.Steps[0].Micros != 1.5 || !first.Time.Equal(rec(0).Time) {
		t.Errorf("fields: %+v", first)
	}
	rep, err := Verify(path)
	if err != nil || rep.Records != 50 || rep.First != 1 || rep.Last != 50 {
		t.Fatalf("%+v %v", rep, err)
	}
	// Reopened, the chain goes on.
	w.Close()
	w = open(t, Options{Path: path})
	writeN(t, w, 50, 5)
	if rep, err := Verify(path); err != nil || rep.Last != 55 {
		t.Fatalf("after reopening: %+v %v", rep, err)
	}
}

// Rotation keeps Keep files, and the chain runs across them.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w := open(t, Options{Path: path, MaxBytes: 2000, Keep: 3})
	for i := 0; i < 10; i++ {
		writeN(t, w, i*10, 10)
	}
	files := []string{path + ".3", path + ".2", path + ".1", path}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
		if ls := lines(t, f); !strings.Contains(ls[0], `"genesis"`) {
			t.Errorf("%s opens without a genesis", f)
		}
	}
	if _, err := os.Stat(path + ".4"); err == nil {
		t.Error("more files than Keep")
	}
	rep, err := Verify(files...)
	if err != nil || rep.Files != 4 || rep.Last != 100 || rep.First == 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	// The last record of a rotated file, deleted, breaks the chain there.
	ls := lines(t, path+".2")
	os.WriteFile(path+".2", []byte(strings.Join(ls[:len(ls)-1], "\n")+"\n"), 0o600)
	var e *Error
	if _, err := Verify(files...); !errors.As(err, &e) || e.File != path+".1" || e.Line != 1 || !strings.Contains(e.Problem, "deleted") {
		t.Fatalf("a record deleted across a rotation: %v", err)
	}
}

// Every kind of tampering is caught, where it happened.
func TestVerifyCatches(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	w := open(t, Options{Path: path})
	writeN(t, w, 0, 10)
	w.Close()
	good := lines(t, path)
	for name, c := range map[string]struct {
		edit    func(ls []string) []string
		line    int
		problem string
	}{
		"edited": {func(ls []string) []string {
			ls[4] = strings.Replace(ls[4], `"decision":"allow"`, `"decision":"deny"`, 1)
			return ls
		}, 5, "edited"},
		"deleted":         {func(ls []string) []string { return append(ls[:3], ls[4:]...) }, 4, "deleted"},
		"reordered":       {func(ls []string) []string { ls[5], ls[6] = ls[6], ls[5]; return ls }, 6, "seq jumps from 5 to 7"},
		"not json":        {func(ls []string) []string { ls[2] = "hello"; return ls }, 3, "not a record"},
		"truncated start": {func(ls []string) []string { return ls[1:] }, 1, "no genesis"},
	} {
		t.Run(name, func(t *testing.T) {
			ls := c.edit(append([]string(nil), good...))
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
			os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o600)
			_, err := Verify(p)
			var e *Error
			if !errors.As(err, &e) || e.Line != c.line || !strings.Contains(e.Problem, c.problem) {
				t.Fatalf("got %v, want line %d with %q", err, c.line, c.problem)
			}
		})
	}
	torn := filepath.Join(dir, "torn")
	os.WriteFile(torn, []byte(strings.Join(good, "\n")+"\n"+good[0][:20]), 0o600)
	if _, err := Verify(torn); err == nil || !strings.Contains(err.Error(), "torn last line") {
		t.Errorf("torn: %v", err)
	}
	if _, err := Open(Options{Path: torn}); err == nil || !strings.Contains(err.Error(), "torn line") {
		t.Errorf("opening a torn log: %v", err)
	}
}

// Write never waits for the disk: with the writer stalled, a full queue
// drops and counts (or, fail-closed, refuses); afterwards nothing leaks.
func TestBoundedQueue(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, failClosed := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		w, err := Open(Options{Path: path, Buffer: 4, FailClosed: failClosed})
		if err != nil {
			t.Fatal(err)
		}
		stall, stalled := make(chan struct{}), make(chan struct{}, 1)
		w.stallHook = func() {
			select {
			case stalled <- struct{}{}:
			default:
			}
			<-stall
		}
		w.Write(rec(0))
		<-stalled // the goroutine holds one record and waits
		var refused int
		for i := 1; i <= 10; i++ {
			done := make(chan error, 1)
			go func() { done <- w.Write(rec(i)) }()
			select {
			case err := <-done:
				if err != nil {
					if !errors.Is(err, ErrFull) {
						t.Fatal(err)
					}
					refused++
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Write blocked")
			}
		}
		close(stall)
		if failClosed && (refused != 6 || w.Dropped() != 0) {
			t.Errorf("fail closed: %d refused, %d dropped", refused, w.Dropped())
		}
		if !failClosed && (refused != 0 || w.Dropped() != 6) {
			t.Errorf("fail open: %d refused, %d dropped", refused, w.Dropped())
		}
		w.Close()
		if rep, err := Verify(path); err != nil || rep.Records != 5 {
			t.Errorf("%+v %v", rep, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}
}

// Fail-closed, Reserve holds a queue place before the call runs: with the
// queue full it refuses, so no call runs whose record could not be
// queued; Commit then never finds the queue full.
func TestReserve(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path, Buffer: 2, FailClosed: true})
	stall, stalled := make(chan struct{}), make(chan struct{}, 1)
	w.stallHook = func() {
		select {
		case stalled <- struct{}{}:
		default:
		}
		<-stall
	}
	w.Write(rec(0))
	<-stalled
	if err := w.Reserve(); err != nil {
		t.Fatal(err)
	}
	if err := w.Reserve(); err != nil {
		t.Fatal(err)
	}
	if err := w.Reserve(); !errors.Is(err, ErrFull) {
		t.Fatalf("a third place in a queue of two: %v", err)
	}
	if err := w.Write(rec(9)); !errors.Is(err, ErrFull) {
		t.Fatalf("a write with every place held: %v", err)
	}
	w.Release()
	// Commit returns once its record is in the file, not before.
	committed := make(chan error, 1)
	go func() { committed <- w.Commit(context.Background(), rec(1)) }()
	select {
	case err := <-committed:
		t.Fatalf("Commit returned with the writer stalled: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(stall)
	if err := <-committed; err != nil {
		t.Fatal(err)
	}
	if got := len(lines(t, path)); got != 2 {
		t.Fatalf("Commit returned with %d lines in the file, want 2", got)
	}
	writeN(t, w, 2, 1)
	w.Close()
	if err := w.Reserve(); err == nil {
		t.Error("Reserve on a closed log")
	}
	if rep, err := Verify(path); err != nil || rep.Records != 3 {
		t.Errorf("%+v %v", rep, err)
	}
}

// A sink that fails: fail-closed Writes refuse, naming the cause;
// otherwise records are dropped and Err says why.
func TestSinkFailure(t *testing.T) {
	for _, failClosed := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		w := open(t, Options{Path: path, FailClosed: failClosed})
		writeN(t, w, 0, 1)
		w.f.Close() // the disk goes away under the writer
		w.Write(rec(1))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.Flush(ctx)
		cancel()
		if err == nil || w.Err() == nil || !strings.Contains(w.Err().Error(), path) {
			t.Fatalf("flush after the file closed: %v / %v", err, w.Err())
		}
		err = w.Write(rec(2))
		if failClosed && (err == nil || !strings.Contains(err.Error(), "fail_closed")) {
			t.Errorf("fail closed: %v", err)
		}
		if !failClosed && err != nil {
			t.Errorf("fail open: %v", err)
		}
	}
}

// Commit, from many calls at once, returns each once its record is in the
// file, and says so when the file cannot be written.
func TestCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path, Buffer: 8, FailClosed: true})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			for w.Reserve() != nil { // the queue holds 8; callers take turns
				runtime.Gosched()
			}
			if err := w.Commit(context.Background(), rec(i)); err != nil {
				errs <- err
				return
			}
			// Whatever Commit returned for is in the file already.
			if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte(rec(i).ArgsSHA256)) {
				errs <- fmt.Errorf("record %d committed and not in the file", i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(lines(t, path)); n != 100 {
		t.Fatalf("%d lines, want 100", n)
	}

	w.f.Close() // the disk goes away under the writer
	if err := w.Reserve(); err != nil {
		t.Fatal(err)
	}
	err := w.Commit(context.Background(), rec(100))
	if err == nil || !strings.Contains(err.Error(), "fail_closed") || !strings.Contains(err.Error(), path) {
		t.Fatalf("a commit the disk refused: %v", err)
	}
}

// A record that would pass MaxLine is shrunk, never dropped: its
// arguments become a preview, its long text is cut and flagged, and the
// chain holds. (The old Writer dropped it and counted the loss.)
func TestOversizedRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path})
	big := rec(1)
	big.Args = json.RawMessage(`"` + strings.Repeat("x", MaxLine) + `"`)
	huge := rec(2)
	huge.Reason = strings.Repeat("\x01", MaxLine) // escaped six-fold
	huge.Steps = make([]Step, 1000)
	w.Write(rec(0))
	w.Write(big)
	w.Write(huge)
	writeN(t, w, 3, 1)
	if w.Dropped() != 0 {
		t.Errorf("dropped %d", w.Dropped())
	}
	if rep, err := Verify(path); err != nil || rep.Records != 4 {
		t.Fatalf("%+v %v", rep, err)
	}
	ls := lines(t, path)
	var r1, r2 Record
	json.Unmarshal([]byte(ls[1]), &r1)
	json.Unmarshal([]byte(ls[2]), &r2)
	if r1.Args != nil || !strings.HasPrefix(r1.ArgsPreview, `"xxx`) || len(r1.ArgsPreview) > PreviewBytes || !slices.Contains(r1.Flags, "args_truncated") {
		t.Errorf("big args: %.200s", ls[1])
	}
	if len(ls[2]) > MaxLine || len(r2.Steps) != maxSteps || !slices.Contains(r2.Flags, "record_truncated") {
		t.Errorf("huge record: %d bytes, %d steps, flags %v", len(ls[2]), len(r2.Steps), r2.Flags)
	}
}

// FuzzVerify: any file is read without a panic, in bounded time.
func FuzzVerify(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.jsonl")
	w, err := Open(Options{Path: path})
	if err != nil {
		f.Fatal(err)
	}
	writeN(f, w, 0, 3)
	w.Close()
	seed, _ := os.ReadFile(path)
	f.Add(seed)
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"seq":1,"prev":"x","genesis":"g"}` + "\n" + `{"seq":1,"prev":"y"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		p := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := Verify(p)
		if err == nil && rep.Records > bytes.Count(data, []byte("\n")) {
			t.Fatalf("%d records from %d lines", rep.Records, bytes.Count(data, []byte("\n")))
		}
	})
}

// BenchmarkWrite is a record through the Writer (queue, chain, hash,
// write), against json.Marshal and a buffered write of the same record.
func BenchmarkWrite(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	w := open(b, Options{Path: path, Buffer: 1 << 16})
	r := rec(1)
	var base time.Duration
	plain, _ := os.Create(filepath.Join(b.TempDir(), "plain.jsonl"))
	defer plain.Close()
	var buf bytes.Buffer
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		line, _ := json.Marshal(r)
		buf.Write(line)
		buf.WriteByte('\n')
		if buf.Len() > 64<<10 {
			plain.Write(buf.Bytes())
			buf.Reset()
		}
		base += time.Since(t0)
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
	}
	w.Flush(context.Background())
	total := time.Since(start) - base
	b.ReportMetric(float64(total)/float64(b.N), "writer-ns/record")
	b.ReportMetric(float64(base)/float64(b.N), "marshal+write-ns/record")
	b.ReportMetric(float64(total)/float64(base), "ratio")
}

// appendRecord writes what encoding/json writes, byte for byte.
func TestAppendRecord(t *testing.T) {
	yes := true
	for _, r := range []Record{
		rec(7),
		{Time: time.Date(2026, 11, 24, 20, 0, 0, 123456789, time.UTC), Agent: "a\"<b>&\u2028\x01\xff\b\f", Method: "tools/call", Decision: "deny",
			Steps: []Step{{Link: "l", Source: "nexus.hcl:3", Action: "deny", Micros: 0.25}, {Link: "m", Action: "allow", Micros: 12}},
			Args:  json.RawMessage(`{"a":[1,2]}`), IsError: &yes, Bytes: 42, Flags: []string{"tags: <IMPORTANT>"}, Seq: 9, Genesis: "g", Prev: "p"},
		{Method: "tools/list", Decision: "allow", Seq: 1, Prev: "x"},
		{Method: "tools/call", Decision: "deny", Report: json.RawMessage(`{"kind":"Policy Denied","message":"a \u003cb\u003e","fix":["x"]}`), Seq: 2, Prev: "y"},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendRecord(nil, &r)
		if err != nil || string(got) != string(want) {
			t.Errorf("got  %s %v\nwant %s", got, err, want)
		}
	}
	bad := Record{Args: json.RawMessage(`{nope`)}
	if _, err := appendRecord(nil, &bad); err == nil {
		t.Error("invalid args were written")
	}
}

// FuzzAppendRecord holds appendRecord to encoding/json for any strings.
func FuzzAppendRecord(f *testing.F) {
	f.Add("claude", "gh", "delete_repo", "deny", "rules", "x\u2028y", 1.5)
	f.Fuzz(func(t *testing.T, agent, server, tool, decision, link, reason string, us float64) {
		if math.IsNaN(us) || math.IsInf(us, 0) || math.Abs(us) > 1e20 || (us != 0 && math.Abs(us) < 1e-6) {
			return // encoding/json writes those with an exponent; durations are never so
		}
		r := Record{Time: time.Unix(1_800_000_000, 5).UTC(), Agent: agent, Server: server, Tool: tool, Method: "tools/call", Decision: decision, Link: link, Reason: reason,
			Steps: []Step{{Link: link, Action: decision, Micros: us}}, Seq: 3, Prev: "p"}
		want, _ := json.Marshal(r)
		got, err := appendRecord(nil, &r)
		if err != nil || string(got) != string(want) {
			t.Fatalf("got  %s %v\nwant %s", got, err, want)
		}
	})
}
