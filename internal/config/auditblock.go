package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Audit is the audit block: every decision point (a call, a listing's
// withholding, a read, a prompt, a server's request) written to a
// hash-chained JSON Lines file (internal/audit).
type Audit struct {
	Path     string // absolute
	MaxBytes int    // rotate past this; 0: the default (64 MiB)
	Keep     int    // rotated files kept; 0: the default (5)
	Buffer   int    // records queued before calls wait or records drop; 0: the default (4096)
	// FailClosed refuses calls while the log cannot be written; otherwise
	// the trouble is logged loudly and the dropped records are counted.
	FailClosed bool
	// IncludeArguments writes a call's arguments (their secret-named values
	// masked) beside their sha256, which is always written.
	IncludeArguments bool

	// Key is the HMAC key of the chain; SigningKey (or the file
	// SigningKeyFile) the base64 ed25519 seed checkpoints are signed
	// with; PublicKey checks them where the signing key is not at hand.
	// Key and SigningKey should come from sensitive variables: Refs holds
	// their references ("/key", "/signing_key"), which compile-down writes
	// instead of the values. Unset, they come from NEXUS_AUDIT_KEY and
	// NEXUS_AUDIT_SIGNING_KEY (internal/audit).
	Key, SigningKey, SigningKeyFile, PublicKey string
	// CheckpointPath is the checkpoint file (absolute; default Path +
	// ".checkpoints"); CheckpointEvery the records between checkpoints (0:
	// the default, 1000).
	CheckpointPath  string
	CheckpointEvery int
	Refs            map[string]Template
	Source          diag.Source
}

var (
	auditSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "path", Required: true}, {Name: "max_bytes"}, {Name: "keep"},
		{Name: "buffer"}, {Name: "fail_closed"}, {Name: "include_arguments"}, {Name: "key"}, {Name: "signing_key"}, {Name: "signing_key_file"},
		{Name: "public_key"}, {Name: "checkpoint_path"}, {Name: "checkpoint_every"}}}
	auditKeys = []string{"path", "max_bytes", "keep", "buffer", "fail_closed", "include_arguments", "key", "signing_key", "signing_key_file",
		"public_key", "checkpoint_path", "checkpoint_every"}
	auditExample = "audit {\n  path        = \"nexus-audit.jsonl\"  # beside this file\n  max_bytes   = 67108864            # rotate past 64 MiB\n  keep        = 5                   # rotated files kept\n  fail_closed = false               # true: refuse calls while it cannot be written\n  key         = var.audit_key       # HMAC key of the chain (nexus audit keygen)\n  signing_key = var.audit_signing_key  # signs checkpoints\n}"
)

// audit decodes an audit block.
func (h *hclFile) audit(b *hcl.Block) {
	c, ok := h.content(b, auditSchema)
	if !ok {
		return
	}
	a := &Audit{Source: h.blockSource(b)}
	before := len(h.errs)
	at := c.Attributes
	if x := at["path"]; x != nil {
		var ok bool
		if a.Path, ok = h.path(x); ok && a.Path == "" {
			h.errRange(x.Expr.Range(), "", "the audit path is empty", auditExample)
		}
	}
	for name, dst := range map[string]*int{"max_bytes": &a.MaxBytes, "keep": &a.Keep, "buffer": &a.Buffer, "checkpoint_every": &a.CheckpointEvery} {
		if x := at[name]; x != nil {
			*dst, _ = h.integer(x, 0)
		}
	}
	refs := map[string]Template{}
	for name, dst := range map[string]*string{"key": &a.Key, "signing_key": &a.SigningKey, "public_key": &a.PublicKey} {
		if x := at[name]; x != nil {
			*dst, _ = h.str(x, refs, "/"+name)
		}
	}
	if len(refs) > 0 {
		a.Refs = refs
	}
	for name, dst := range map[string]*string{"signing_key_file": &a.SigningKeyFile, "checkpoint_path": &a.CheckpointPath} {
		if x := at[name]; x != nil {
			*dst, _ = h.path(x)
		}
	}
	for name, dst := range map[string]*bool{"fail_closed": &a.FailClosed, "include_arguments": &a.IncludeArguments} {
		if x := at[name]; x != nil {
			*dst, _ = h.boolean(x)
		}
	}
	if len(h.errs) == before {
		h.out.audit = a
	}
}

// audit decodes the "audit" object of a JSON file.
func (j *jsonFile) audit(v *jval) {
	d := &dec{j: j, what: "audit"}
	if v.kind != '{' {
		d.typeErr(v, "audit", "an object", `{"path": "nexus-audit.jsonl"}`)
		return
	}
	if !d.keys(v, "audit", auditKeys) {
		return
	}
	a := &Audit{Source: j.at(v.off)}
	before := len(j.errs)
	for _, m := range v.obj {
		switch m.key {
		case "path":
			if s, ok := d.str(m.val, "path", ""); ok {
				if s == "" {
					d.errAt(m.val, "the audit path is empty")
				}
				a.Path, _ = j.path(d, m.val, "path", s)
			}
		case "max_bytes":
			a.MaxBytes, _ = d.integer(m.val, m.key, 0)
		case "keep":
			a.Keep, _ = d.integer(m.val, m.key, 0)
		case "buffer":
			a.Buffer, _ = d.integer(m.val, m.key, 0)
		case "fail_closed":
			a.FailClosed, _ = d.boolean(m.val, m.key)
		case "include_arguments":
			a.IncludeArguments, _ = d.boolean(m.val, m.key)
		case "checkpoint_every":
			a.CheckpointEvery, _ = d.integer(m.val, m.key, 0)
		case "key", "signing_key", "public_key":
			s, _ := d.str(m.val, m.key, "/"+m.key)
			*map[string]*string{"key": &a.Key, "signing_key": &a.SigningKey, "public_key": &a.PublicKey}[m.key] = s
		case "signing_key_file", "checkpoint_path":
			if s, ok := d.str(m.val, m.key, ""); ok && s != "" {
				*map[string]*string{"signing_key_file": &a.SigningKeyFile, "checkpoint_path": &a.CheckpointPath}[m.key], _ = j.path(d, m.val, m.key, s)
			}
		}
	}
	if len(d.refs) > 0 {
		a.Refs = d.refs
	}
	if a.Path == "" && len(j.errs) == before {
		d.errAt(v, `the audit object has no "path"`)
	}
	if len(j.errs) == before {
		j.out.audit = a
	}
}
