package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// A Checkpoint is a signed statement of the log's head, as a transparency
// log's signed tree head is: "record Seq of the file whose genesis is
// Genesis ends at byte Size, and the link of its line is Head". It is
// written to a sink other than the log (CheckpointPath), so that cutting
// the log's tail or editing its last records, which no later link can
// show, disagrees with a signature nobody without the signing key can
// make again.
type Checkpoint struct {
	V       int       `json:"checkpoint"` // the format: 1
	Time    time.Time `json:"time"`
	File    string    `json:"file"`    // the log file's name when signed (rotation renames it)
	Genesis string    `json:"genesis"` // the genesis of that file's first record: which file it is
	Size    int64     `json:"size"`    // the file's bytes through record Seq
	Seq     uint64    `json:"seq"`
	Head    string    `json:"head"`             // the link of record Seq's line: HMAC-SHA256 when Keyed, else sha256
	Keyed   bool      `json:"keyed"`            // the chain is HMAC-keyed
	KeyID   string    `json:"key_id,omitempty"` // which HMAC key (KeyID)
	Sig     string    `json:"sig,omitempty"`    // ed25519 over sigContext and the line up to its "sig"

	Line int `json:"-"` // where ReadCheckpoints found it
}

// MaxCheckpointLine bounds one checkpoint line.
const MaxCheckpointLine = 4 << 10

const (
	sigContext = "nexus audit checkpoint v1\n"
	sigField   = `,"sig":"`
)

// signed is the line c stands for, signed with key.
func (c Checkpoint) signed(key ed25519.PrivateKey) []byte {
	c.Sig, c.V = "", 1
	body, _ := json.Marshal(c) // a struct of plain fields: it cannot fail
	body = body[:len(body)-1]  // open again, for the signature
	sig := ed25519.Sign(key, append([]byte(sigContext), append(body, '}')...))
	body = append(body, sigField...)
	body = base64.StdEncoding.AppendEncode(body, sig)
	return append(body, `"}`...)
}

// ParseCheckpoint reads one checkpoint line and checks its signature with
// pub (nil: the signature is only checked for form).
func ParseCheckpoint(line []byte, pub ed25519.PublicKey) (Checkpoint, error) {
	var c Checkpoint
	if len(line) > MaxCheckpointLine {
		return c, fmt.Errorf("a line of %d bytes, over the %d a checkpoint takes", len(line), MaxCheckpointLine)
	}
	at := bytes.LastIndex(line, []byte(sigField))
	if at < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
		return c, errors.New("not a signed checkpoint (no \"sig\" at its end)")
	}
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return c, fmt.Errorf("not a checkpoint: %v", err)
	}
	if d.More() {
		return c, errors.New("not a checkpoint: more after its object")
	}
	switch {
	case c.V != 1:
		return c, fmt.Errorf("checkpoint format %d, and this Nexus reads 1", c.V)
	case c.Seq == 0 || c.Size <= 0:
		return c, errors.New("a checkpoint of no record (seq or size 0)")
	case !isHex(c.Head, 64) || !isHex(c.Genesis, 64):
		return c, errors.New("a checkpoint whose head or genesis is not 64 hex digits")
	case c.Keyed != (c.KeyID != ""):
		return c, errors.New("a checkpoint whose keyed and key_id disagree")
	}
	sig, err := base64.StdEncoding.DecodeString(string(line[at+len(sigField) : len(line)-2]))
	if err != nil || len(sig) != ed25519.SignatureSize {
		return c, errors.New("a checkpoint whose sig is not an ed25519 signature in base64")
	}
	if pub != nil {
		msg := append([]byte(sigContext), line[:at]...)
		if !ed25519.Verify(pub, append(msg, '}'), sig) {
			return c, errors.New("its signature does not verify with the public key: it was edited or forged, or signed with another key")
		}
	}
	return c, nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// CheckpointError is a checkpoint line that cannot be trusted.
type CheckpointError struct {
	File    string
	Line    int
	Problem string
}

func (e *CheckpointError) Error() string {
	return e.File + ":" + strconv.Itoa(e.Line) + ": " + e.Problem
}

// ReadCheckpoints reads the checkpoint file at path, each line checked
// with pub; a missing file is no checkpoints.
func ReadCheckpoints(path string, pub ed25519.PublicKey) ([]Checkpoint, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []Checkpoint
	for n := 1; ; n++ {
		line, err := readLineMax(r, MaxCheckpointLine)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, &CheckpointError{path, n, err.Error()}
		}
		c, err := ParseCheckpoint(line, pub)
		if err != nil {
			return out, &CheckpointError{path, n, err.Error()}
		}
		c.Line = n
		out = append(out, c)
	}
}
