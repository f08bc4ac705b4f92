package host

import (
	"crypto/ed25519"
	"os"
	"time"

	"github.com/nexus-mcp/nexus/internal/audit"
)

// An audit log (the config's audit block) links each record to the one
// before it, by HMAC with the block's key or by plain sha256, and a
// signed checkpoint file names records now and then: VerifyAudit checks
// both, as `nexus audit verify` does.

// VerifyAuditOptions say how to check a log beyond its plain chain.
type VerifyAuditOptions struct {
	// Key is the chain's HMAC key: a keyed log cannot be checked without
	// it.
	Key []byte
	// Public checks the signed checkpoints in Checkpoints (a file); with
	// either missing, none are checked, and AuditReport.Warnings says so.
	Public      ed25519.PublicKey
	Checkpoints string
}

// AuditVerifyOptions finds the keys and checkpoint file that check the
// log whose newest file is last, as the host that wrote it had them: the
// audit block of cfg (nil: none), else NEXUS_AUDIT_KEY and
// NEXUS_AUDIT_SIGNING_KEY and last + ".checkpoints". public, when set,
// is the base64 ed25519 key that checks the checkpoints, and checkpoints
// their file.
func AuditVerifyOptions(cfg *Config, last, checkpoints, public string) (VerifyAuditOptions, error) {
	var o VerifyAuditOptions
	cpPath := last + ".checkpoints"
	var (
		keys audit.Keys
		err  error
	)
	if c := internalConfig(cfg); c != nil && c.Audit != nil {
		b := *c.Audit
		if public != "" {
			b.PublicKey = public
		}
		cpPath = b.CheckpointPath
		if cpPath == "" {
			cpPath = b.Path + ".checkpoints"
		}
		keys, err = audit.ConfigKeys(&b)
	} else {
		keys, err = audit.KeySource{PublicKey: public}.Load()
	}
	if err != nil {
		return o, hostErr(err)
	}
	if checkpoints != "" {
		cpPath = checkpoints
	}
	if _, err := os.Stat(cpPath); err != nil && checkpoints == "" && keys.Public == nil {
		cpPath = "" // nothing to check them with, and none there
	}
	o.Key, o.Public, o.Checkpoints = keys.MAC, keys.Public, cpPath
	return o, nil
}

// AuditReport is what VerifyAudit read.
type AuditReport struct {
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

// AuditBreakError is the first place an audit log's chain or checkpoints
// do not hold, told as a transparency log's auditor tells it: what was
// expected there, what is there, and what that means.
type AuditBreakError struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Seq      uint64 `json:"seq,omitempty"` // of the record at Line, 0 when unknown
	Problem  string `json:"problem"`
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	Meaning  string `json:"meaning,omitempty"`
	from     error
}

func (e *AuditBreakError) Error() string { return e.Unwrap().Error() }
func (e *AuditBreakError) Unwrap() error {
	return or(e.from, &audit.Error{File: e.File, Line: e.Line, Seq: e.Seq, Problem: e.Problem,
		Expected: e.Expected, Found: e.Found, Meaning: e.Meaning})
}

// VerifyAudit checks the chain across files given oldest first (a rotated
// log: path.3 path.2 path.1 path): every line a record, seq going up by
// one, each record linked to the line before (across files too), and
// every signed checkpoint of a file given matching the record it names,
// the newest not past the file's end. It reads line by line, never a
// whole file. A break is an *AuditBreakError; a key or file that cannot
// be used is another error.
func VerifyAudit(o VerifyAuditOptions, files ...string) (AuditReport, error) {
	rep, err := audit.VerifyWith(audit.VerifyOptions(o), files...)
	return AuditReport(rep), hostErr(err)
}

// NewAuditKeys makes an HMAC key for the chain (hex), an ed25519 signing
// key for the checkpoints (its base64 seed) and the public key that
// checks them (base64): what an audit block's key, signing_key and a
// verifier's public_key take.
func NewAuditKeys() (key, signing, public string, err error) {
	key, signing, public, err = audit.NewKeys()
	return key, signing, public, hostErr(err)
}

// The conversions above keep host's types in step with audit's.
var (
	_ = AuditReport(audit.Report{})
	_ = audit.VerifyOptions(VerifyAuditOptions{})
)

// AuditLog is a hash-chained audit log a program opened (Options.Audit):
// every decision point is recorded in it. Without one, the host opens the
// config's audit block's (Host.OpenAudit).
type AuditLog struct{ w *audit.Writer }

func (l *AuditLog) writer() *audit.Writer {
	if l == nil {
		return nil
	}
	return l.w
}
