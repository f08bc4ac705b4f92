package audit

import (
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Block is the config's audit block: every decision point (a call, a
// listing's withholding, a read, a prompt, a server's request) written to
// a hash-chained JSON Lines file.
type Block struct {
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
	// instead of the values. Unset, they come from EnvKey and
	// EnvSigningKey.
	Key, SigningKey, SigningKeyFile, PublicKey string
	// CheckpointPath is the checkpoint file (absolute; default Path +
	// ".checkpoints"); CheckpointEvery the records between checkpoints (0:
	// the default, 1000).
	CheckpointPath  string
	CheckpointEvery int
	Refs            map[string]option.Template
	Source          diag.Source
}

// ConfigBlock is the config's audit block, in nexus.hcl and JSON alike:
// the config loader decodes and writes it through its options.
var ConfigBlock = option.Block[Block]{
	Name:        "audit",
	Options:     blockOptions,
	New:         func() *Block { return &Block{} },
	HCLExample:  "audit {\n  path        = \"nexus-audit.jsonl\"  # beside this file\n  max_bytes   = 67108864            # rotate past 64 MiB\n  keep        = 5                   # rotated files kept\n  fail_closed = false               # true: refuse calls while it cannot be written\n  key         = var.audit_key       # HMAC key of the chain (nexus audit keygen)\n  signing_key = var.audit_signing_key  # signs checkpoints\n}",
	JSONExample: `{"path": "nexus-audit.jsonl"}`,
}

var blockOptions = option.Table[Block]{
	{HCL: "path", JSON: "path", Required: true, Example: `"audit.jsonl"`,
		Decode: func(b *Block, v option.Value) {
			var ok bool
			if b.Path, ok = v.Path(""); ok && b.Path == "" {
				v.FailExample("the audit path is empty")
			}
		},
		// Always written: it is required.
		Out: func(b *Block, _ option.Writer) any { return b.Path }},
	count("max_bytes", func(b *Block) *int { return &b.MaxBytes }, `1048576`),
	count("keep", func(b *Block) *int { return &b.Keep }, `3`),
	count("buffer", func(b *Block) *int { return &b.Buffer }, `128`),
	flag("fail_closed", func(b *Block) *bool { return &b.FailClosed }),
	flag("include_arguments", func(b *Block) *bool { return &b.IncludeArguments }),
	secret("key", func(b *Block) *string { return &b.Key }, `"0123456789abcdef0123456789abcdef"`),
	secret("signing_key", func(b *Block) *string { return &b.SigningKey }, `"c2VlZA=="`),
	file("signing_key_file", func(b *Block) *string { return &b.SigningKeyFile }, `"audit.key"`),
	{HCL: "public_key", JSON: "public_key", Example: `"cHVibGlj"`,
		Decode: func(b *Block, v option.Value) { b.PublicKey, _ = v.String("/public_key") },
		Out: func(b *Block, w option.Writer) any {
			if b.PublicKey == "" {
				return nil
			}
			return w.String("/public_key", b.PublicKey)
		}},
	file("checkpoint_path", func(b *Block) *string { return &b.CheckpointPath }, `"audit.checkpoints"`),
	count("checkpoint_every", func(b *Block) *int { return &b.CheckpointEvery }, `10`),
}

// count is a number of at least 0, 0 meaning the default.
func count(name string, field func(*Block) *int, example string) option.Option[Block] {
	return option.Option[Block]{HCL: name, JSON: name, Example: example,
		Decode: func(b *Block, v option.Value) { *field(b), _ = v.Int(0) },
		Out: func(b *Block, _ option.Writer) any {
			if *field(b) == 0 {
				return nil
			}
			return *field(b)
		}}
}

// flag is a setting off by default.
func flag(name string, field func(*Block) *bool) option.Option[Block] {
	return option.Option[Block]{HCL: name, JSON: name, Example: `true`,
		Decode: func(b *Block, v option.Value) { *field(b), _ = v.Bool() },
		Out: func(b *Block, _ option.Writer) any {
			if !*field(b) {
				return nil
			}
			return true
		}}
}

// secret is a key that should come from a sensitive variable: one written
// into the file as it is is never copied out of it.
func secret(name string, field func(*Block) *string, example string) option.Option[Block] {
	ptr := "/" + name
	return option.Option[Block]{HCL: name, JSON: name, Example: example,
		Decode: func(b *Block, v option.Value) { *field(b), _ = v.String(ptr) },
		Out: func(b *Block, w option.Writer) any {
			if *field(b) == "" && b.Refs[ptr] == nil {
				return nil
			}
			return w.Secret(ptr, "key", *field(b))
		}}
}

// file is a path beside the config file (relative to its directory).
func file(name string, field func(*Block) *string, example string) option.Option[Block] {
	return option.Option[Block]{HCL: name, JSON: name, Example: example,
		Decode: func(b *Block, v option.Value) { *field(b), _ = v.Path("") },
		Out: func(b *Block, w option.Writer) any {
			if *field(b) == "" {
				return nil
			}
			return w.String("/"+name, *field(b))
		}}
}
