package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// modelInput is a config the model golden loads: a file of the
// repository, or a block of its markdown written to a file of its own.
type modelInput struct {
	golden string // the golden's name under testdata/model/
	path   string // the file to load
	dir    string // the working and home directory it is loaded in
}

// jsonFence is a ```json block of a markdown file: those holding a client
// config (mcpServers, servers) are configs a reader pastes.
var jsonFence = regexp.MustCompile("(?s)```json\n(.*?)```")

// modelInputs are every config in examples/ and testdata/configs/, and
// every config block of the repository's markdown (the console's and the
// lockfile's are read by their own packages).
func modelInputs(t *testing.T, root string) []modelInput {
	t.Helper()
	var in []modelInput
	var files []string
	for _, pat := range []string{"examples/configs/*.json", "examples/configs/*.hcl", "examples/*/*.hcl",
		"examples/policies/*/*.hcl", "internal/config/testdata/configs/*.hcl"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		if filepath.Base(f) == "policy.json" { // a filter's settings, read by file()
			continue
		}
		rel, _ := filepath.Rel(root, f)
		in = append(in, modelInput{golden: strings.NewReplacer("/", "_", ".", "_").Replace(rel), path: f, dir: root})
	}
	// A block is named by its file and a hash of its text, so a block that
	// moves keeps its golden and one that changes gets a new one.
	block := func(file, ext, text string) {
		sum := sha256.Sum256([]byte(text))
		dir := t.TempDir()
		name := "nexus" + ext
		write(t, dir, name, text)
		in = append(in, modelInput{
			golden: "md_" + strings.NewReplacer("/", "_", ".", "_").Replace(file) + "_" + hex.EncodeToString(sum[:4]),
			path:   filepath.Join(dir, name), dir: dir})
	}
	for _, b := range markdownHCL(t, root) {
		if b.info != "" { // console, lockfile
			continue
		}
		block(b.file, ".hcl", placeholder.ReplaceAllString(b.text, `${1}"`+strings.Repeat("0", 64)+`"`))
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range jsonFence.FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], `"mcpServers"`) || strings.Contains(m[1], `"servers"`) {
			block("README.md", ".json", m[1])
		}
	}
	return in
}

// TestModelGolden pins the model every shipped config decodes to, as
// `nexus config show -o json` prints it and as the loader's structs hold
// it, so that moving a block's decoding (issue 39: each block an option
// table in its owner's package) provably leaves the model as it was.
// A config that does not load pins its errors instead.
func TestModelGolden(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	inputs := modelInputs(t, root)
	if len(inputs) < 30 {
		t.Fatalf("found %d configs; the extraction is broken", len(inputs))
	}
	want := map[string]bool{}
	for _, in := range inputs {
		want[in.golden+".golden"] = true
		t.Run(in.golden, func(t *testing.T) {
			cfg, err := Load(Options{Files: []string{in.path}, Dir: in.dir, Home: "/home/user", AllowUnset: true,
				NoDefault: true, LookupEnv: exampleEnv})
			var out string
			if err != nil {
				out = "error:\n" + errText(err)
			} else {
				out = modelJSON(t, cfg)
			}
			out = strings.ReplaceAll(out, root, "$ROOT")
			out = strings.ReplaceAll(out, in.dir, "$DIR")
			golden(t, "model/"+in.golden, out)
		})
	}
	// A golden no config makes any more is a block the docs dropped or
	// changed: it goes with -update.
	old, _ := filepath.Glob(filepath.Join("testdata", "model", "*.golden"))
	for _, p := range old {
		if want[filepath.Base(p)] {
			continue
		}
		if *update {
			os.Remove(p)
			continue
		}
		t.Errorf("%s belongs to no config any more (a markdown block changed?); go test ./internal/config -update removes it", p)
	}
}

// modelJSON is cfg as `nexus config show -o json` prints it (entries'
// settings and origins) and its structs as encoding/json writes them,
// zero values left out.
func modelJSON(t *testing.T, cfg *Config) string {
	t.Helper()
	v := NewView(cfg, false)
	entries := func(es []Entry) []map[string]any {
		out := []map[string]any{}
		for _, e := range es {
			out = append(out, map[string]any{"kind": e.Kind, "name": e.Name, "origin": e.Source,
				"overrides": e.Overrides, "settings": e.Settings})
		}
		return out
	}
	var warns []string
	for _, w := range v.Warnings {
		if !built(w.Message) {
			warns = append(warns, w.String())
		}
	}
	sort.Strings(warns) // maps decide the order some are found in
	show := map[string]any{"files": v.Files, "roots": v.Roots, "servers": entries(v.Servers),
		"plugins": entries(v.Plugins), "filters": entries(v.Filters), "agents": entries(v.Agents),
		"blocks": entries(v.Blocks), "warnings": warns}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	b.WriteString("show:\n")
	if err := enc.Encode(show); err != nil {
		t.Fatal(err)
	}
	// The structs without their zero values: a field added for a new
	// option, unset in every config, changes no golden (adding an option
	// touches its owner's package alone), while a value that changes does.
	c := *cfg
	c.Warnings = nil
	for _, w := range cfg.Warnings {
		if !built(w.Message) {
			c.Warnings = append(c.Warnings, w)
		}
	}
	raw, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	var model any
	if err := json.Unmarshal(raw, &model); err != nil {
		t.Fatal(err)
	}
	b.WriteString("model:\n")
	if err := enc.Encode(pruned(model)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// built reports a warning that a plugin or filter the config names is not
// built yet: whether it is depends on whether `make build` ran before the
// test, not on the config, so the golden leaves it out.
func built(msg string) bool { return strings.Contains(msg, "does not exist (yet)") }

// pruned is v, decoded JSON, without null, "", 0, false and empty objects
// and arrays as members of objects (an array keeps its elements, so
// indexes still line up).
func pruned(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			x = pruned(x)
			if zero(x) {
				delete(v, k)
			} else {
				v[k] = x
			}
		}
	case []any:
		for i, x := range v {
			v[i] = pruned(x)
		}
	}
	return v
}

func zero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case float64:
		return v == 0
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}
