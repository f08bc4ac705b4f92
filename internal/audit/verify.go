package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// Report is what Verify read.
type Report struct {
	Files   int    `json:"files"`
	Records int    `json:"records"`
	First   uint64 `json:"first"` // seq
	Last    uint64 `json:"last"`
}

// Error is the first break of the chain Verify found.
type Error struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Seq     uint64 `json:"seq,omitempty"` // of the record at Line, 0 when unknown
	Problem string `json:"problem"`
}

func (e *Error) Error() string {
	at := fmt.Sprintf("%s:%d", e.File, e.Line)
	if e.Seq > 0 {
		at += fmt.Sprintf(": record seq %d", e.Seq)
	}
	return at + ": " + e.Problem
}

// Verify checks the chain across files given oldest first (a rotated
// log: path.3 path.2 path.1 path): every line a record, seq going up by
// one, each prev the sha256 of the line before (across files too), and a
// genesis opening each file. It reads line by line, never a whole file.
func Verify(paths ...string) (Report, error) {
	var rep Report
	var prevHash string
	var prevSeq uint64
	prevLine, prevFile := 0, ""
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return rep, err
		}
		rep.Files++
		sc := bufio.NewReader(f)
		line := 0
		for {
			raw, err := readLine(sc)
			if err == io.EOF {
				break
			}
			line++
			if err != nil {
				f.Close()
				return rep, &Error{File: path, Line: line, Problem: err.Error()}
			}
			var r Record
			if err := json.Unmarshal(raw, &r); err != nil || r.Seq == 0 || r.Prev == "" {
				f.Close()
				return rep, &Error{File: path, Line: line, Problem: "not a record (edited, or another file's lines?)"}
			}
			first := line == 1
			want := prevHash
			switch {
			case first && r.Genesis == "":
				f.Close()
				return rep, &Error{File: path, Line: line, Seq: r.Seq, Problem: "the file's first record has no genesis: records before it were deleted, or the file was cut"}
			case !first && r.Genesis != "":
				f.Close()
				return rep, &Error{File: path, Line: line, Seq: r.Seq, Problem: "a genesis in the middle of a file: records were inserted, or two logs were joined"}
			case rep.Records == 0:
				// The first record read: its prev is the genesis's hash at
				// the log's start, or the last record of an older file
				// not given (rotated away): both are accepted.
				want = r.Prev
			}
			if rep.Records > 0 && r.Seq != prevSeq+1 {
				problem := fmt.Sprintf("seq jumps from %d to %d: records were deleted or moved", prevSeq, r.Seq)
				if r.Seq <= prevSeq {
					problem = fmt.Sprintf("seq goes back from %d to %d: records were reordered", prevSeq, r.Seq)
				}
				f.Close()
				return rep, &Error{File: path, Line: line, Seq: r.Seq, Problem: problem}
			}
			if r.Prev != want {
				f.Close()
				return rep, &Error{File: prevFile, Line: prevLine, Seq: prevSeq,
					Problem: fmt.Sprintf("edited: its hash is not the prev of the record after it (%s:%d)", path, line)}
			}
			if rep.Records == 0 {
				rep.First = r.Seq
			}
			rep.Records++
			prevHash, prevSeq, prevLine, prevFile = hashLine(raw), r.Seq, line, path
			rep.Last = r.Seq
		}
		f.Close()
	}
	return rep, nil
}

// readLine reads one line without its newline: a line over MaxLine, or
// one the file ends in the middle of, is an error.
func readLine(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := r.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > MaxLine+1 {
			return nil, fmt.Errorf("a line over %d bytes: not a record this writer made", MaxLine)
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
