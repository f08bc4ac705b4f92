package config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/internal/bounded"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/filelock"
)

// Workspace trust. A config file found by walking up from the working
// directory (the ancestor and local layers) comes with whatever repository
// the directory is in, so it is read as data only until the person trusts
// it: its servers do not start, its file() and env_file are not read.
// Trust is the file's absolute path and the sha256 of its bytes, so that
// editing the file (a pull, a checkout) takes the trust away, as direnv's
// allow does. The user's own layer (~/.nexus/), --config, NEXUS_CONFIG and
// the built-in default are trusted implicitly: the person chose them.

// TrustEnv names the trust store's path when set (tests, and people who
// keep it elsewhere); otherwise it is ~/.nexus/trust.json.
const TrustEnv = "NEXUS_TRUST"

// MaxTrustSize bounds the trust store: a few thousand entries.
const MaxTrustSize = 1 << 20

// Trusted is one trusted config file.
type Trusted struct {
	Path    string    `json:"path"`   // absolute, symlinks resolved
	SHA256  string    `json:"sha256"` // of the file's bytes, hex
	Granted time.Time `json:"granted"`
}

type trustFile struct {
	Version int       `json:"version"`
	Trusted []Trusted `json:"trusted"`
}

// NeedsTrust says whether files of layer must be trusted before use.
func NeedsTrust(layer string) bool { return layer == LayerAncestor || layer == LayerLocal }

// TrustPath is the trust store's path: $NEXUS_TRUST, else
// home/.nexus/trust.json; "" when neither is known.
func TrustPath(lookup func(string) (string, bool), home string) string {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if p, ok := lookup(TrustEnv); ok && p != "" {
		return p
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".nexus", "trust.json")
}

// ReadTrust reads the trust store; a missing one is empty.
func ReadTrust(path string) ([]Trusted, error) {
	if path == "" {
		return nil, nil
	}
	data, err := bounded.ReadFile(path, MaxTrustSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the trust store %s cannot be read: %w; fix or delete it (then trust each workspace again with nexus trust PATH)", path, err)
	}
	list, err := parseTrust(data)
	if err != nil {
		return nil, fmt.Errorf("the trust store %s is corrupt: %v; delete it (then trust each workspace again with nexus trust PATH)", path, err)
	}
	return list, nil
}

// parseTrust decodes a trust store's bytes, refusing anything it does not
// fully understand: a store that half-parses must not trust anything.
func parseTrust(data []byte) ([]Trusted, error) {
	if len(data) > MaxTrustSize {
		return nil, fmt.Errorf("it is over the %s limit", bounded.Size(MaxTrustSize))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var tf trustFile
	if err := dec.Decode(&tf); err != nil {
		return nil, fmt.Errorf("not a trust store (%v)", err)
	}
	if dec.More() {
		return nil, errors.New("text after the JSON object")
	}
	if tf.Version != 1 {
		return nil, fmt.Errorf("version %d, want 1", tf.Version)
	}
	for i, t := range tf.Trusted {
		if !filepath.IsAbs(t.Path) {
			return nil, fmt.Errorf("entry %d: path %q is not absolute", i+1, t.Path)
		}
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("entry %d: %q is not a sha256 in hex", i+1, t.SHA256)
		}
	}
	return tf.Trusted, nil
}

// WriteTrust replaces the trust store with list: private to the user, and
// a temporary file renamed over the old one, so a reader never sees half.
func WriteTrust(path string, list []Trusted) error {
	if path == "" {
		return errors.New("no trust store: set HOME or " + TrustEnv)
	}
	if list == nil {
		list = []Trusted{}
	}
	b, err := json.MarshalIndent(trustFile{Version: 1, Trusted: list}, "", "  ")
	if err != nil {
		return err
	}
	if len(b) > MaxTrustSize {
		return fmt.Errorf("the trust store would be over the %s limit; remove entries with nexus untrust", bounded.Size(MaxTrustSize))
	}
	return bounded.WriteFile(path, append(b, '\n'))
}

// TrustLockWait bounds how long UpdateTrust waits for another process
// changing the trust store at the same time.
const TrustLockWait = 10 * time.Second

// UpdateTrust changes the trust store at path under its lock (path +
// ".lock"): change gets the entries as they are and returns them as they
// should be. Two processes trusting files at once (two terminals, an
// editor's extension) each see the other's change rather than writing
// over it. An error from change leaves the store as it was. A nil change
// empties the store, even one that cannot be read.
func UpdateTrust(path string, change func([]Trusted) ([]Trusted, error)) error {
	if path == "" {
		return errors.New("no trust store: set HOME or " + TrustEnv)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("the trust store's directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), TrustLockWait)
	defer cancel()
	lf, err := filelock.Acquire(ctx, path+".lock")
	if err != nil {
		return fmt.Errorf("the trust store is being changed by another nexus: %w; try again when it is done, or remove the lock file if that process is gone", err)
	}
	defer lf.Close()
	if change == nil {
		return WriteTrust(path, nil)
	}
	list, err := ReadTrust(path)
	if err != nil {
		return err
	}
	if list, err = change(list); err != nil {
		return err
	}
	return WriteTrust(path, list)
}

// TrustKey is the path a config file is trusted under: absolute, with
// symlinks resolved, so that one file has one key however it is reached.
func TrustKey(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// HashConfig reads a config file as Load would (bounded, a regular file)
// and returns its bytes and their sha256 in hex.
func HashConfig(path string) ([]byte, string, error) {
	data, err := bounded.ReadFile(path, MaxFileSize)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return data, hex.EncodeToString(sum[:]), nil
}

// IsTrusted says whether list trusts the file key with content hash sum.
func IsTrusted(list []Trusted, key, sum string) bool {
	return slices.ContainsFunc(list, func(t Trusted) bool { return t.Path == key && t.SHA256 == sum })
}

// Untrusted is a workspace config file that was not applied, and what it
// would do if it were.
type Untrusted struct {
	Path   string   // as discovered
	Layer  string   // LayerAncestor or LayerLocal
	SHA256 string   // of the bytes that were looked at
	Edited bool     // trusted before with other content
	Runs   []string // what it would run and read, one a line (inventory.go)
}

// gate splits discovered files into those that may be applied and those
// that wait for trust. A workspace file is read once, here: its bytes are
// hashed, and when trusted, those same bytes are what is parsed, so the
// file cannot change between the check and the use.
func (ld *loader) gate(files []File) ([]File, []Untrusted, error) {
	var (
		list   []Trusted
		loaded bool
		out    []File
		bad    []Untrusted
	)
	for _, f := range files {
		if !NeedsTrust(f.Layer) {
			out = append(out, f)
			continue
		}
		if !loaded {
			var err error
			if list, err = ReadTrust(TrustPath(ld.lookup, ld.home)); err != nil {
				return nil, nil, Errors{&diag.Report{Title: errTitle, Source: diag.Source{File: f.Path, Layer: f.Layer},
					Problem: "cannot tell whether this workspace config is trusted: " + err.Error()}}
			}
			loaded = true
		}
		// A file that cannot be read here is reported here, never handed
		// on for load to read (it could have changed by then).
		key, err := TrustKey(ld.abs(f.Path))
		var data []byte
		var sum string
		if err == nil {
			data, sum, err = HashConfig(key)
		}
		if err != nil {
			return nil, nil, Errors{&diag.Report{Title: errTitle, Source: diag.Source{File: f.Path, Layer: f.Layer}, Cause: err,
				Problem: "cannot read this workspace config to check whether it is trusted: " + unwrapPathError(err).Error(),
				Fix:     []string{"Check the file (a regular file of at most 10 MiB), or name another config with --config."}}}
		}
		if IsTrusted(list, key, sum) {
			ld.read[f.Path] = data
			out = append(out, f)
			continue
		}
		edited := slices.ContainsFunc(list, func(t Trusted) bool { return t.Path == key })
		bad = append(bad, Untrusted{Path: f.Path, Layer: f.Layer, SHA256: sum, Edited: edited, Runs: inventory(f.Path, data)})
	}
	return out, bad, nil
}

// UntrustedReport says which workspace configs were not applied, what
// each would run and read, and how to trust them.
func UntrustedReport(us []Untrusted) *diag.Report {
	if len(us) == 0 {
		return nil
	}
	r := &diag.Report{Title: "Untrusted Workspace Config"}
	var paths []string
	for _, u := range us {
		paths = append(paths, u.Path)
		head := u.Path + " (" + u.Layer + " layer) is not trusted"
		if u.Edited {
			head = u.Path + " (" + u.Layer + " layer) changed since it was trusted"
		}
		lines := u.Runs
		if len(lines) == 0 {
			lines = []string{"(it runs no command and reads no file)"}
		}
		r.Details = append(r.Details, diag.Section{Heading: head + "; trusted, it would use", Lines: lines})
	}
	if len(us) == 1 {
		r.Problem = "a config file found in a parent or the working directory has not been trusted, so none of its servers start and none of the files it names are read"
	} else {
		r.Problem = "config files found in a parent or the working directory have not been trusted, so none of their servers start and none of the files they name are read"
	}
	r.Causes = []string{"The directory is in a repository or download whose config you have not reviewed and trusted"}
	if slices.ContainsFunc(us, func(u Untrusted) bool { return u.Edited }) {
		r.Causes = append(r.Causes, "The file changed since you trusted it (trust is for its exact content): review the change")
	}
	r.Fix = []string{"Read the file; if you want what it runs: nexus trust " + strings.Join(quoteAll(paths), " "),
		"or name a config of your own with --config FILE"}
	return r
}

func quoteAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = shellQuote(p)
	}
	return out
}

// shellQuote quotes p for a POSIX shell when it needs it.
func shellQuote(p string) string {
	if p != "" && strings.IndexFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return p
	}
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// confined resolves p, written in a config file of layer in dir, as
// resolvePath does. In a workspace file a relative path must stay in the
// workspace: the file's directory, or the directory holding it when that
// is .nexus/. ".." and symlinks that lead out are refused (a cloned
// repository must not read ~/.ssh through "../../"); an absolute path or
// ~/ is the trusted file's explicit choice, and so is allowed.
func (ld *loader) confined(p, dir, layer string) (string, error) {
	full := resolvePath(p, dir, ld.home)
	if full == "" || !NeedsTrust(layer) || filepath.IsAbs(p) || p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		return full, nil
	}
	root := workspaceRoot(dir)
	if !within(root, full) {
		return "", fmt.Errorf("%q leaves the workspace %s: a relative path in a workspace config must stay inside the directory tree it is in (use an absolute path if it really is meant)", p, root)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("%q: the workspace %s cannot be resolved: %v", p, root, unwrapPathError(err))
	}
	real, err := resolveExisting(full)
	if err != nil {
		return "", fmt.Errorf("%q cannot be resolved: %v", p, unwrapPathError(err))
	}
	if !within(realRoot, real) {
		return "", fmt.Errorf("%q leads through a symlink to %s, outside the workspace %s; a relative path in a workspace config must stay inside the directory tree it is in (use an absolute path if it really is meant)", p, real, root)
	}
	return full, nil
}

// workspaceRoot is the tree a workspace file's relative paths stay in.
func workspaceRoot(dir string) string {
	if filepath.Base(dir) == ".nexus" {
		return filepath.Dir(dir)
	}
	return dir
}

// within says whether p is root or below it (both clean and absolute).
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveExisting resolves the symlinks of p's longest existing prefix, so
// that a path not yet created (a plugin not yet built) is checked too.
func resolveExisting(p string) (string, error) {
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// Inventory lists what the config file at path, holding data, would run
// and read, without evaluating any of it: what `nexus trust` shows.
func Inventory(path string, data []byte) []string { return inventory(path, data) }

// WorkspaceFiles are the config files of a directory that need trust, as
// discovery would find them there: dir/.nexus/'s and dir's own nexus.hcl
// and nexus.hcl.json (or, when dir is a .nexus directory, its files).
func WorkspaceFiles(dir string) []string {
	var out []string
	add := func(p string) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			out = append(out, p)
		}
	}
	if filepath.Base(filepath.Clean(dir)) == ".nexus" {
		for _, n := range dirFiles {
			add(filepath.Join(dir, n))
		}
		return out
	}
	for _, n := range dirFiles {
		add(filepath.Join(dir, ".nexus", n))
	}
	for _, n := range []string{"nexus.hcl.json", "nexus.hcl"} {
		add(filepath.Join(dir, n))
	}
	return out
}
