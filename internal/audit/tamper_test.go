package audit

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testKeys are fresh keys, as nexus audit keygen makes them.
func testKeys(t testing.TB) Keys {
	t.Helper()
	mac, seed, pub, err := NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	k, err := KeySource{Key: mac, SigningKey: seed, Getenv: func(string) string { return "" }}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if base64.StdEncoding.EncodeToString(k.Public) != pub {
		t.Fatal("the public key printed is not the signing key's")
	}
	return k
}

// keyedLog writes n records (the i-th denied when deny(i)) to a keyed log
// with a checkpoint every `every` records, and closes it.
func keyedLog(t *testing.T, k Keys, n, every int) (string, VerifyOptions) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(Options{Path: path, Keys: k, CheckpointEvery: every})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := rec(i)
		if i%10 == 3 {
			r.Decision, r.Link, r.Reason = "deny", "no-destructive", "destructive tools need a person"
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path, VerifyOptions{Key: k.MAC, Public: k.Public, Checkpoints: path + ".checkpoints"}
}

// rechain rewrites a log's records with edit applied and every link
// recomputed: with l's key (an attacker's guess) or without one.
func rechain(t *testing.T, path string, l *linker, edit func([]Record) []Record) {
	t.Helper()
	var rs []Record
	for _, s := range lines(t, path) {
		var r Record
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rs = edit(rs)
	var out bytes.Buffer
	var prev string
	for i := range rs {
		r := &rs[i]
		r.Seq, r.Prev, r.MAC = uint64(i+1), "", ""
		if i == 0 {
			prev = l.link([]byte(r.Genesis))
		}
		if l.key != nil {
			r.MAC = prev
		} else {
			r.Prev, r.KeyID = prev, ""
		}
		line, err := appendRecord(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(line)
		out.WriteByte('\n')
		prev = l.link(line)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func dropLines(t *testing.T, path string, n int) {
	t.Helper()
	ls := lines(t, path)
	if err := os.WriteFile(path, []byte(strings.Join(ls[:len(ls)-n], "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Each attack of the outside test, on a keyed log with signed
// checkpoints: verify catches it and says what the chain or checkpoint
// expected. The same attack on a plain sha256 chain (all the old Writer
// made) verifies: that is the gap.
func TestTamperCaught(t *testing.T) {
	k := testKeys(t)
	wrong := newLinker([]byte("an attacker's guess at the key"))
	flip := func(rs []Record) []Record {
		rs[13].Decision, rs[13].Link, rs[13].Reason = "allow", "", ""
		return rs
	}
	del := func(rs []Record) []Record { return append(rs[:13:13], rs[14:]...) }
	cases := []struct {
		name   string
		attack func(t *testing.T, path string)
		want   string // in the break
	}{
		{"drop the last line", func(t *testing.T, p string) { dropLines(t, p, 1) }, "ends before its last signed checkpoint"},
		{"drop the last 100", func(t *testing.T, p string) { dropLines(t, p, 100) }, "100 records (seq 151-250) were cut"},
		{"edit the last record", func(t *testing.T, p string) {
			b, _ := os.ReadFile(p)
			i := bytes.LastIndex(b, []byte(`"agent":"claude"`))
			copy(b[i:], `"agent":"mallet"`)
			os.WriteFile(p, b, 0o600)
		}, "not what a signed checkpoint says"},
		{"deny to allow, links recomputed unkeyed", func(t *testing.T, p string) { rechain(t, p, newLinker(nil), flip) }, "not what a signed checkpoint says"},
		{"deny to allow, links recomputed with a guessed key", func(t *testing.T, p string) { rechain(t, p, wrong, flip) }, "not linked to its genesis"},
		{"deny to allow, links recomputed from it on", func(t *testing.T, p string) {
			// The attacker keeps the records before the edit as they are.
			ls := lines(t, p)
			rechain(t, p, wrong, flip)
			forged := lines(t, p)
			os.WriteFile(p, []byte(strings.Join(append(ls[:13:13], forged[13:]...), "\n")+"\n"), 0o600)
		}, "record seq 13: edited"},
		{"delete a record and renumber", func(t *testing.T, p string) {
			ls := lines(t, p)
			rechain(t, p, wrong, del)
			forged := lines(t, p)
			os.WriteFile(p, []byte(strings.Join(append(ls[:13:13], forged[13:]...), "\n")+"\n"), 0o600)
		}, "record seq 13: edited"},
		{"empty the file", func(t *testing.T, p string) { os.WriteFile(p, nil, 0o600) }, "the newest signed checkpoint is of no file given"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, o := keyedLog(t, k, 250, 50)
			if rep, err := VerifyWith(o, path); err != nil || rep.Checkpoints != 5 || rep.Uncovered != 0 || rep.Keyed != 250 {
				t.Fatalf("before the attack: %+v %v", rep, err)
			}
			c.attack(t, path)
			_, err := VerifyWith(o, path)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Error(), c.want) {
				t.Fatalf("after the attack: %v; want a break saying %q", err, c.want)
			}
			if e.Problem == "" || (e.Expected == "" && !strings.Contains(e.Problem, "genesis")) {
				t.Errorf("the break does not say what was expected: %+v", e)
			}

			// The old, plain chain: the same attack (links recomputed
			// unkeyed) verifies.
			plainPath := filepath.Join(t.TempDir(), "plain.jsonl")
			w, err := Open(Options{Path: plainPath})
			if err != nil {
				t.Fatal(err)
			}
			writeN(t, w, 0, 250)
			w.Close()
			if strings.Contains(c.name, "guessed key") || strings.Contains(c.name, "from it on") || strings.Contains(c.name, "renumber") {
				rechain(t, plainPath, newLinker(nil), map[bool]func([]Record) []Record{true: del, false: flip}[strings.Contains(c.name, "renumber")])
			} else {
				c.attack(t, plainPath)
			}
			if _, err := Verify(plainPath); err != nil && !strings.Contains(c.name, "empty") && !strings.Contains(c.name, "edit the last") {
				t.Errorf("the plain chain caught it too, so the test shows nothing: %v", err)
			}
		})
	}
}

// Records after the newest checkpoint are reported as not yet covered,
// not silently accepted as checked.
func TestUncoveredTail(t *testing.T) {
	k := testKeys(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path, Keys: k, CheckpointEvery: 50})
	writeN(t, w, 0, 120)
	rep, err := VerifyWith(VerifyOptions{Key: k.MAC, Public: k.Public, Checkpoints: path + ".checkpoints"}, path)
	if err != nil || rep.Covered != 100 || rep.Uncovered != 20 || rep.Checkpoints != 2 {
		t.Fatalf("%+v %v", rep, err)
	}
	w.Close() // the shutdown checkpoint covers the rest
	rep, err = VerifyWith(VerifyOptions{Key: k.MAC, Public: k.Public, Checkpoints: path + ".checkpoints"}, path)
	if err != nil || rep.Covered != 120 || rep.Uncovered != 0 {
		t.Fatalf("after Close: %+v %v", rep, err)
	}
}

// A keyed log needs its key; a wrong key is told apart from tampering; an
// edited or forged checkpoint is caught; a checkpoint of another key is
// refused.
func TestVerifyKeys(t *testing.T) {
	k := testKeys(t)
	path, o := keyedLog(t, k, 20, 5)
	if _, err := VerifyWith(VerifyOptions{}, path); err == nil || !strings.Contains(err.Error(), "give its key") {
		t.Errorf("no key: %v", err)
	}
	bad := o
	bad.Key = []byte("another key of sixteen bytes or more")
	if _, err := VerifyWith(bad, path); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Errorf("wrong key: %v", err)
	}
	other := testKeys(t)
	bad = o
	bad.Public = other.Public
	var e *Error
	if _, err := VerifyWith(bad, path); !errors.As(err, &e) || !strings.Contains(e.Problem, "signature does not verify") {
		t.Errorf("another public key: %v", err)
	}
	// Move a checkpoint's seq back, as one hiding a cut would.
	b, _ := os.ReadFile(o.Checkpoints)
	b = bytes.Replace(b, []byte(`"seq":20`), []byte(`"seq":19`), 1)
	os.WriteFile(o.Checkpoints, b, 0o600)
	if _, err := VerifyWith(o, path); !errors.As(err, &e) || !strings.Contains(e.Problem, "signature does not verify") {
		t.Errorf("edited checkpoint: %v", err)
	}
	// Opening the log with another key is refused: its chain would break.
	if _, err := Open(Options{Path: path, Keys: other}); err == nil || !strings.Contains(err.Error(), "keyed with another key") {
		t.Errorf("open with another key: %v", err)
	}
	if _, err := Open(Options{Path: path}); err == nil || !strings.Contains(err.Error(), "has no key") {
		t.Errorf("open without a key: %v", err)
	}
}

// A log started unkeyed goes on keyed: verify accepts the switch and
// counts the unkeyed records; the reverse (keyed, then plain) is a break.
func TestKeyAdded(t *testing.T) {
	k := testKeys(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path})
	writeN(t, w, 0, 3)
	w.Close()
	w = open(t, Options{Path: path, Keys: k})
	writeN(t, w, 3, 3)
	w.Close()
	rep, err := VerifyWith(VerifyOptions{Key: k.MAC, Public: k.Public, Checkpoints: path + ".checkpoints"}, path)
	if err != nil || rep.Keyed != 3 || rep.Unkeyed != 3 || rep.Uncovered != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
	ls := lines(t, path)
	var r Record
	json.Unmarshal([]byte(ls[5]), &r)
	r.MAC, r.Prev = "", plain([]byte(ls[4]))
	line, _ := appendRecord(nil, &r)
	ls[5] = string(line)
	os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o600)
	var e *Error
	if _, err := VerifyWith(VerifyOptions{Key: k.MAC}, path); !errors.As(err, &e) || !strings.Contains(e.Problem, "plain sha256 after") {
		t.Errorf("downgrade: %v", err)
	}
}

// Checkpoints cover rotated files too: a cut in the middle of the set is
// caught by the chain, and each file's newest checkpoint by its end.
func TestCheckpointRotation(t *testing.T) {
	k := testKeys(t)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path, Keys: k, MaxBytes: 2000, Keep: 3, CheckpointEvery: 1000})
	writeN(t, w, 0, 20)
	w.Close()
	files := []string{path + ".2", path + ".1", path}
	o := VerifyOptions{Key: k.MAC, Public: k.Public, Checkpoints: path + ".checkpoints"}
	rep, err := VerifyWith(o, files...)
	if err != nil || rep.Uncovered != 0 || rep.Checkpoints < 3 {
		t.Fatalf("%+v %v", rep, err)
	}
	dropLines(t, path+".1", 1)
	var e *Error
	if _, err := VerifyWith(o, files...); !errors.As(err, &e) || e.File != path+".1" {
		t.Fatalf("a rotated file cut: %v", err)
	}
}

// A second Writer on the same log is refused, in this process as in
// another, naming the process that holds it; after Close it may open.
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	w := open(t, Options{Path: path})
	_, err := Open(Options{Path: path})
	if err == nil || !strings.Contains(err.Error(), "in use by another writer") || !strings.Contains(err.Error(), "process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second writer: %v", err)
	}
	if b, _ := os.ReadFile(path + ".lock"); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q", b)
	}
	w.Close()
	w2 := open(t, Options{Path: path})
	w2.Close()
}

// A signed checkpoint parses back; its signature covers every field.
func TestCheckpointLine(t *testing.T) {
	k := testKeys(t)
	c := Checkpoint{File: "a.jsonl", Genesis: strings.Repeat("ab", 32), Size: 10, Seq: 3, Head: strings.Repeat("cd", 32), Keyed: true, KeyID: "0011223344556677"}
	line := c.signed(k.Sign)
	got, err := ParseCheckpoint(line, k.Public)
	if err != nil || got.Seq != 3 || got.Head != c.Head {
		t.Fatalf("%+v %v", got, err)
	}
	for _, edit := range [][2]string{{`"size":10`, `"size":11`}, {`"file":"a.jsonl"`, `"file":"b.jsonl"`}, {`"keyed":true`, `"keyed":false`}} {
		if _, err := ParseCheckpoint(bytes.Replace(line, []byte(edit[0]), []byte(edit[1]), 1), k.Public); err == nil {
			t.Errorf("%s accepted", edit[1])
		}
	}
}

// FuzzParseCheckpoint: any line is read without a panic, and one that
// parses with a key was signed by it.
func FuzzParseCheckpoint(f *testing.F) {
	seed := make([]byte, ed25519.SeedSize)
	key := ed25519.NewKeyFromSeed(seed)
	pub := key.Public().(ed25519.PublicKey)
	c := Checkpoint{File: "a.jsonl", Genesis: strings.Repeat("ab", 32), Size: 10, Seq: 3, Head: strings.Repeat("cd", 32)}
	f.Add(c.signed(key))
	f.Add([]byte(`{"checkpoint":1,"sig":"x"}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"checkpoint":1,"seq":1,"size":1,"head":"","genesis":"","keyed":false,"sig":"` + strings.Repeat("A", 88) + `"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := ParseCheckpoint(line, pub)
		if err == nil && (c.Seq == 0 || len(c.Head) != 64) {
			t.Fatalf("accepted %q as %+v", line, c)
		}
		ParseCheckpoint(line, nil)
	})
}
