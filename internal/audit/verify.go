package audit

import (
	"bufio"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Report is what Verify read.
type Report struct {
	Files   int    `json:"files"`
	Records int    `json:"records"`
	First   uint64 `json:"first"` // seq
	Last    uint64 `json:"last"`
	// Keyed counts the records whose MAC was checked with the key;
	// Unkeyed those chained by plain sha256, which shows accidental damage
	// only (anyone who can write the file can recompute it).
	Keyed   int    `json:"keyed"`
	Unkeyed int    `json:"unkeyed"`
	KeyID   string `json:"key_id,omitempty"`
	// Checkpoints counts the signed checkpoints matched to records;
	// Covered is the seq the newest of them covers. Uncovered counts the
	// records after it, not yet covered by a checkpoint: cutting or
	// editing them would not be noticed.
	Checkpoints int       `json:"checkpoints"`
	Covered     uint64    `json:"covered,omitempty"`
	CoveredAt   time.Time `json:"covered_at,omitzero"`
	Uncovered   int       `json:"uncovered"`
	// Skipped counts the checkpoints of files not given (rotated away,
	// or older logs).
	Skipped  int      `json:"skipped,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Error is the first break of the chain Verify found, told as a
// transparency log's auditor tells it: what the chain or a signed
// checkpoint says should be there, what is, and what that means.
type Error struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Seq      uint64 `json:"seq,omitempty"` // of the record at Line, 0 when unknown
	Problem  string `json:"problem"`
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	Meaning  string `json:"meaning,omitempty"`
}

func (e *Error) Error() string {
	at := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Seq > 0 {
		at += fmt.Sprintf(": record seq %d", e.Seq)
	}
	s := at + ": " + e.Problem
	if e.Expected != "" {
		s += "\n  expected: " + e.Expected
	}
	if e.Found != "" {
		s += "\n  found:    " + e.Found
	}
	if e.Meaning != "" {
		s += "\n  meaning:  " + e.Meaning
	}
	return s
}

// VerifyOptions say how to check a log beyond its plain chain.
type VerifyOptions struct {
	// Key is the chain's HMAC key: a keyed log cannot be checked without
	// it.
	Key []byte
	// Public checks the signed checkpoints in Checkpoints (a file); with
	// either missing, none are checked, and Report.Warnings says so.
	Public      ed25519.PublicKey
	Checkpoints string
}

// Verify checks the plain chain of files given oldest first; see
// VerifyWith.
func Verify(paths ...string) (Report, error) { return VerifyWith(VerifyOptions{}, paths...) }

// VerifyWith checks the chain across files given oldest first (a rotated
// log: path.3 path.2 path.1 path): every line a record, seq going up by
// one, each record's link (MAC with the key, or prev) that of the line
// before (across files too), a genesis opening each file, and every
// signed checkpoint of a file given matching the record it names, the
// newest not past the file's end. It reads line by line, never a whole
// file. A break is an *Error; a key or file that cannot be used is
// another error.
func VerifyWith(o VerifyOptions, paths ...string) (Report, error) {
	v := &verifier{o: o, links: newLinker(o.Key), plainLinks: newLinker(nil), keyID: KeyID(o.Key)}
	v.rep.KeyID = v.keyID
	if err := v.loadCheckpoints(); err != nil {
		return v.rep, err
	}
	for _, path := range paths {
		if err := v.file(path); err != nil {
			return v.rep, err
		}
	}
	if err := v.finish(); err != nil {
		return v.rep, err
	}
	return v.rep, nil
}

type verifier struct {
	o          VerifyOptions
	rep        Report
	links      *linker // keyed, when o.Key is set
	plainLinks *linker
	keyID      string

	// The record before: its keyed and plain links, where it was.
	prevMAC, prevPlain string
	prevKeyed          bool
	prevSeq            uint64
	prevLine           int
	prevFile           string

	cps      map[string]map[uint64]*Checkpoint // by genesis, then seq
	newest   map[string]*Checkpoint            // by genesis
	last     *Checkpoint                       // the newest in the sink
	geneses  map[string]bool                   // of the files given
	coveredN int                               // records read through the newest checkpoint matched
}

func (v *verifier) loadCheckpoints() error {
	if v.o.Checkpoints == "" {
		v.rep.Warnings = append(v.rep.Warnings, "no checkpoint file: records cut from the log's end, or edited there, cannot be detected (set the audit block's signing_key)")
		return nil
	}
	if v.o.Public == nil {
		if _, err := os.Stat(v.o.Checkpoints); err == nil {
			v.rep.Warnings = append(v.rep.Warnings, "the checkpoints in "+v.o.Checkpoints+" are not checked: no public key (the audit block's signing_key or public_key)")
		}
		return nil
	}
	cs, err := ReadCheckpoints(v.o.Checkpoints, v.o.Public)
	var ce *CheckpointError
	if errors.As(err, &ce) {
		return &Error{File: ce.File, Line: ce.Line, Problem: "a checkpoint that cannot be trusted: " + ce.Problem,
			Meaning: "the checkpoint file was edited, or lines of another file were written into it; keep it as evidence"}
	}
	if err != nil {
		return fmt.Errorf("reading the checkpoints %s: %w", v.o.Checkpoints, err)
	}
	if len(cs) == 0 {
		v.rep.Warnings = append(v.rep.Warnings, "no signed checkpoints in "+v.o.Checkpoints+" yet")
	}
	v.cps, v.newest, v.geneses = map[string]map[uint64]*Checkpoint{}, map[string]*Checkpoint{}, map[string]bool{}
	for i := range cs {
		c := &cs[i]
		m := v.cps[c.Genesis]
		if m == nil {
			m = map[uint64]*Checkpoint{}
			v.cps[c.Genesis] = m
		}
		m[c.Seq] = c
		if n := v.newest[c.Genesis]; n == nil || c.Seq >= n.Seq {
			v.newest[c.Genesis] = c
		}
		v.last = c
	}
	return nil
}

func (v *verifier) where(c *Checkpoint) string {
	return fmt.Sprintf("the checkpoint signed %s (%s:%d)", c.Time.Format(time.RFC3339), v.o.Checkpoints, c.Line)
}

func short(h string) string {
	if len(h) > 16 {
		return h[:16] + "…"
	}
	return h
}

func (v *verifier) file(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	v.rep.Files++
	r := bufio.NewReader(f)
	var (
		line     int
		off      int64
		genesis  string
		lastSeq  uint64
		lastLine int
	)
	for {
		raw, err := readLineMax(r, MaxLine)
		if err == io.EOF {
			break
		}
		line++
		if err != nil {
			return &Error{File: path, Line: line, Problem: err.Error()}
		}
		off += int64(len(raw) + 1)
		var rec Record
		if err := json.Unmarshal(raw, &rec); err != nil || rec.Seq == 0 || (rec.Prev == "") == (rec.MAC == "") {
			return &Error{File: path, Line: line, Problem: "not a record (edited, or another file's lines?)"}
		}
		keyed := rec.MAC != ""
		first := line == 1
		switch {
		case first && rec.Genesis == "":
			return &Error{File: path, Line: line, Seq: rec.Seq, Problem: "the file's first record has no genesis: records before it were deleted, or the file was cut"}
		case !first && rec.Genesis != "":
			return &Error{File: path, Line: line, Seq: rec.Seq, Problem: "a genesis in the middle of a file: records were inserted, or two logs were joined"}
		case keyed && v.o.Key == nil:
			return fmt.Errorf("%s:%d: the log is keyed (its records carry an HMAC, key id %s): give its key (the audit block's key, or %s) to check it", path, line, rec.KeyID, EnvKey)
		case rec.KeyID != "" && rec.KeyID != v.keyID:
			return fmt.Errorf("%s:%d: the log was keyed with another key (key id %s; the key given is %s): give the key it was written with", path, line, rec.KeyID, v.keyID)
		}
		if first {
			genesis = rec.Genesis
			if v.geneses != nil {
				v.geneses[genesis] = true
			}
		}
		link := rec.Prev
		if keyed {
			link = rec.MAC
		}
		if v.rep.Records > 0 && rec.Seq != v.prevSeq+1 {
			problem := fmt.Sprintf("seq jumps from %d to %d: records were deleted or moved", v.prevSeq, rec.Seq)
			if rec.Seq <= v.prevSeq {
				problem = fmt.Sprintf("seq goes back from %d to %d: records were reordered", v.prevSeq, rec.Seq)
			}
			return &Error{File: path, Line: line, Seq: rec.Seq, Problem: problem}
		}
		switch {
		case v.rep.Records == 0 && rec.Seq == 1:
			// The log's first record: linked to its genesis.
			want, got := v.plainLinks.link([]byte(rec.Genesis)), link
			if keyed {
				want = v.links.link([]byte(rec.Genesis))
			}
			if got != want {
				return &Error{File: path, Line: line, Seq: rec.Seq, Problem: "the log's first record is not linked to its genesis",
					Expected: "the link of its genesis: " + short(want), Found: short(got),
					Meaning: "the record was forged or edited, or records before it were deleted and the rest renumbered"}
			}
		case v.rep.Records == 0:
			// The first record read of a log whose start is not given
			// (rotated away): its link is the last record's of that file.
		case v.prevKeyed && !keyed:
			return &Error{File: path, Line: line, Seq: rec.Seq, Problem: "a record chained by plain sha256 after records chained by HMAC",
				Expected: "a mac: HMAC-SHA256 of the line before, with the key (id " + v.keyID + ")",
				Found:    "prev " + short(link) + ", a hash anyone can compute",
				Meaning:  "someone without the key rewrote the log from here on (or the key was removed from the config); the records from this one on cannot be trusted"}
		case keyed && link != v.prevMAC, !keyed && link != v.prevPlain:
			want, how := v.prevPlain, "sha256"
			if keyed {
				want, how = v.prevMAC, "HMAC-SHA256 with the key"
			}
			meaning := "record seq %d was changed after the record after it was written; the records from seq %d on cannot be trusted"
			if keyed {
				meaning = "record seq %d was changed after the record after it was written, or the links from it on were recomputed by someone without the key (a deleted record, a changed decision); the records from seq %d on cannot be trusted"
			}
			return &Error{File: v.prevFile, Line: v.prevLine, Seq: v.prevSeq,
				Problem:  fmt.Sprintf("edited: its link is not the one the record after it (%s:%d) carries", path, line),
				Expected: fmt.Sprintf("record seq %d carries %s of this line: %s", rec.Seq, how, short(want)),
				Found:    fmt.Sprintf("record seq %d carries %s", rec.Seq, short(link)),
				Meaning:  fmt.Sprintf(meaning, v.prevSeq, v.prevSeq)}
		}
		if v.rep.Records == 0 {
			v.rep.First = rec.Seq
		}
		if keyed {
			v.rep.Keyed++
		} else {
			v.rep.Unkeyed++
		}
		v.rep.Records++
		v.rep.Last = rec.Seq
		v.prevPlain = v.plainLinks.link(raw)
		if v.o.Key != nil {
			v.prevMAC = v.links.link(raw)
		}
		v.prevKeyed, v.prevSeq, v.prevLine, v.prevFile = keyed, rec.Seq, line, path
		lastSeq, lastLine = rec.Seq, line
		if c := v.cps[genesis][rec.Seq]; c != nil {
			head := v.prevPlain
			if c.Keyed {
				head = v.prevMAC
			}
			if c.Head != head || c.Size != off {
				return &Error{File: path, Line: line, Seq: rec.Seq, Problem: "the log is not what a signed checkpoint says it was",
					Expected: fmt.Sprintf("%s: record seq %d ends at byte %d of %s with head %s", v.where(c), c.Seq, c.Size, c.File, short(c.Head)),
					Found:    fmt.Sprintf("record seq %d ends at byte %d with head %s", rec.Seq, off, short(head)),
					Meaning:  fmt.Sprintf("the records of this file up to seq %d were edited, deleted or inserted after the checkpoint was signed, and the links recomputed; they cannot be trusted", rec.Seq)}
			}
			v.rep.Checkpoints++
			if c.Seq >= v.rep.Covered {
				v.rep.Covered, v.rep.CoveredAt, v.coveredN = c.Seq, c.Time, v.rep.Records
			}
		}
	}
	if c := v.newest[genesis]; c != nil && genesis != "" && c.Seq > lastSeq {
		return &Error{File: path, Line: lastLine, Seq: lastSeq, Problem: "the file ends before its last signed checkpoint",
			Expected: fmt.Sprintf("%s: records through seq %d, %d bytes of %s", v.where(c), c.Seq, c.Size, c.File),
			Found:    fmt.Sprintf("the file ends at seq %d, %d bytes", lastSeq, off),
			Meaning:  fmt.Sprintf("%s cut from the file's end, or the file was replaced; what was recorded there is gone: keep the files as evidence", span(lastSeq+1, c.Seq))}
	}
	return nil
}

func (v *verifier) finish() error {
	if v.o.Key == nil && v.rep.Unkeyed > 0 {
		v.rep.Warnings = append(v.rep.Warnings, "the chain is unkeyed (plain sha256): it shows accidental damage only, since anyone who can write the file can recompute it; set the audit block's key")
	} else if v.rep.Unkeyed > 0 {
		v.rep.Warnings = append(v.rep.Warnings, fmt.Sprintf("%d records, written before the key was set, are chained by plain sha256 only", v.rep.Unkeyed))
	}
	if v.last != nil && !v.geneses[v.last.Genesis] {
		c := v.last
		return &Error{File: v.o.Checkpoints, Line: c.Line, Seq: c.Seq, Problem: "the newest signed checkpoint is of no file given",
			Expected: fmt.Sprintf("%s: a file %s whose first record has genesis %s, through seq %d", v.where(c), c.File, short(c.Genesis), c.Seq),
			Found:    fmt.Sprintf("none of the %d files given begins with that genesis", v.rep.Files),
			Meaning:  "the active log was replaced by another or emptied after the checkpoint was signed; or the files given are not the log's newest (give the active file, " + filepath.Base(c.File) + ", too)"}
	}
	if v.last != nil {
		v.rep.Skipped = 0
		for g, m := range v.cps {
			if !v.geneses[g] {
				v.rep.Skipped += len(m)
			}
		}
	}
	v.rep.Uncovered = v.rep.Records - v.coveredN
	return nil
}

// span names the records from seq a to b: "1 record (seq 7) was", "3
// records (seq 7-9) were".
func span(a, b uint64) string {
	if a == b {
		return fmt.Sprintf("1 record (seq %d) was", a)
	}
	return fmt.Sprintf("%d records (seq %d-%d) were", b-a+1, a, b)
}

// readLineMax reads one line without its newline: a line over max, or
// one the file ends in the middle of, is an error.
func readLineMax(r *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > max+1 {
			return nil, fmt.Errorf("a line over %d bytes: not one this writer made", max)
		}
		switch {
		case err == nil:
			return out[:len(out)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(out) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, errors.New("torn last line (the writer stopped in the middle of it)")
		default:
			return nil, err
		}
	}
}
