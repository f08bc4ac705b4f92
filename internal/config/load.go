package config

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Layer names, lowest first. A Source's Layer is one of these.
const (
	LayerGlobal   = "global"   // ~/.nexus/
	LayerAncestor = "ancestor" // .nexus/ of a directory above the working directory
	LayerLocal    = "local"    // ./.nexus/ and ./nexus.hcl
	LayerFlag     = "flag"     // --config
	LayerEnv      = "env"      // NEXUS_CONFIG
	LayerEmbedded = "embedded" // the built-in default
)

// The names a config file may have in a .nexus directory, lowest first:
// in one directory, HCL wins over JSON.
var dirFiles = []string{"mcp.json", "nexus.hcl.json", "nexus.hcl"}

// defaultHCL is the repository's nexus.hcl (a test keeps the two equal):
// the built-in test server, used when no config file is found, so that
// `nexus tools` works out of the box.
//
//go:embed default.hcl
var defaultHCL []byte

// DefaultHCL returns the built-in default config.
func DefaultHCL() []byte { return bytes.Clone(defaultHCL) }

// Options say where configuration comes from. The zero value discovers the
// layers of the working directory.
type Options struct {
	// Files replace discovery (--config, repeatable); when empty,
	// NEXUS_CONFIG (a path list) does. Later files win.
	Files []string
	// Dir is the working directory: where local and ancestor layers are
	// found and what ${workspaceFolder} means. "" = os.Getwd().
	Dir string
	// Home holds the global layer (~/.nexus/) and is ${userHome}.
	// "" = os.UserHomeDir().
	Home string
	// LookupEnv reads the environment (${VAR}, env(), NEXUS_CONFIG,
	// NEXUS_INPUT_*, NEXUS_VAR_*); nil = os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Prompter asks for VS Code inputs that the environment does not
	// supply; nil = never ask.
	Prompter Prompter
	// AllowUnset turns undefined variables and unanswered inputs into
	// warnings, keeping them as references: for `config show` and
	// `config compile`, which never need the values.
	AllowUnset bool
	// NoDefault leaves out the built-in default when discovery finds
	// nothing.
	NoDefault bool
}

// loader is one Load call.
type loader struct {
	opts    Options
	lookup  func(string) (string, bool)
	home    string
	dir     string
	mu      sync.Mutex
	answers map[string]string // inputs already asked for, by id
	read    map[string][]byte // workspace files' bytes as hashed for trust, by path
}

// Load discovers, reads and merges the configuration. A returned error
// holds every problem in every file (an Errors of diag.Reports). With an
// error, the Config holds only Files and Warnings, so that a validator can
// print those too.
func Load(opts Options) (*Config, error) {
	ld, err := newLoader(opts)
	if err != nil {
		return nil, err
	}
	files, err := ld.discover()
	if err != nil {
		return nil, err
	}
	files, untrusted, err := ld.gate(files)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 && !opts.NoDefault {
		// Only untrusted files were found: the built-in default stands in,
		// as when nothing is found (it runs only Nexus's own test server).
		files = []File{{Layer: LayerEmbedded}}
	}
	cfg, err := ld.load(files)
	cfg.Untrusted = untrusted
	if err != nil || len(cfg.Servers) > 0 || !ld.discovered() || opts.NoDefault || len(files) == 0 || files[0].Layer == LayerEmbedded {
		return cfg, err
	}
	// Layers were found, but none defines a server (a ~/.nexus/nexus.hcl
	// that only grants agent "cli" its permission, say): the built-in
	// default stays beneath them, so the test server does not vanish.
	with, err := ld.load(append([]File{{Layer: LayerEmbedded}}, files...))
	if err != nil {
		return cfg, nil
	}
	with.Untrusted = untrusted
	with.Warnings = append(with.Warnings, Warning{Message: "no config file found defines a server, so the built-in default's (the test server) are used beneath them; " +
		"a server block in any of them replaces the default (nexus config show lists the layers)"})
	return with, nil
}

// discovered says whether the layers come from discovery rather than
// --config or NEXUS_CONFIG, which name exactly what to read.
func (ld *loader) discovered() bool {
	if len(ld.opts.Files) > 0 {
		return false
	}
	v, ok := ld.lookup("NEXUS_CONFIG")
	return !ok || v == ""
}

func newLoader(opts Options) (*loader, error) {
	ld := &loader{opts: opts, lookup: opts.LookupEnv, home: opts.Home, dir: opts.Dir, answers: map[string]string{}, read: map[string][]byte{}}
	if ld.lookup == nil {
		ld.lookup = os.LookupEnv
	}
	if ld.dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("config: working directory: %w", err)
		}
		ld.dir = wd
	}
	if ld.home == "" {
		ld.home, _ = os.UserHomeDir() // no home: no global layer
	}
	return ld, nil
}

// LoadFile reads one config file, as --config does.
func LoadFile(path, layer string) (*Config, error) {
	ld, err := newLoader(Options{})
	if err != nil {
		return nil, err
	}
	return ld.load([]File{{Path: path, Layer: layer}})
}

// Discover lists the config files Load would read, lowest layer first.
// The built-in default is File{Layer: LayerEmbedded} with no path.
func Discover(opts Options) ([]File, error) {
	ld, err := newLoader(opts)
	if err != nil {
		return nil, err
	}
	return ld.discover()
}

func (ld *loader) discover() ([]File, error) {
	if len(ld.opts.Files) > 0 {
		return ld.named(ld.opts.Files, LayerFlag), nil
	}
	if v, ok := ld.lookup("NEXUS_CONFIG"); ok && v != "" {
		return ld.named(filepath.SplitList(v), LayerEnv), nil
	}
	var out []File
	inDir := func(dir, layer string) {
		for _, n := range dirFiles {
			p := filepath.Join(dir, n)
			if ld.exists(p) {
				out = append(out, File{Path: p, Layer: layer})
			}
		}
	}
	global := ""
	if ld.home != "" {
		global = filepath.Join(ld.home, ".nexus")
		inDir(global, LayerGlobal)
	}
	dir := filepath.Clean(ld.dir)
	var ancestors []string
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		ancestors = append(ancestors, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(ancestors) - 1; i >= 0; i-- {
		if dir == ancestors[i] {
			break
		}
		if p := filepath.Join(ancestors[i], ".nexus"); p != global {
			inDir(p, LayerAncestor)
		}
	}
	if p := filepath.Join(dir, ".nexus"); p != global {
		inDir(p, LayerLocal)
	}
	for _, n := range []string{"nexus.hcl.json", "nexus.hcl"} {
		if p := filepath.Join(dir, n); ld.exists(p) {
			out = append(out, File{Path: p, Layer: LayerLocal})
		}
	}
	if len(out) == 0 && !ld.opts.NoDefault {
		out = append(out, File{Layer: LayerEmbedded})
	}
	return out, nil
}

func (ld *loader) named(paths []string, layer string) []File {
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		if p != "" {
			out = append(out, File{Path: p, Layer: layer})
		}
	}
	return out
}

// abs resolves a path given on the command line against the working
// directory; reports keep showing it as it was given.
func (ld *loader) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(ld.dir, p)
}

func (ld *loader) exists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// fileConfig is what one file defines, before layers are merged.
type fileConfig struct {
	servers   []*Server
	plugins   []*Plugin
	filters   []*Filter
	agents    []*Agent
	roots     []string
	hasRoots  bool
	inputs    []Input
	gateway   *Gateway
	sampling  *Sampling
	lock      *LockPolicy
	audit     *Audit
	telemetry *Telemetry
	owned     map[string]ownedValue // the blocks components registered (owned.go)
}

func (ld *loader) load(files []File) (*Config, error) {
	cfg := &Config{Files: files}
	var (
		errs  Errors
		parts []*fileConfig
	)
	// Files are read and decoded in parallel (HCL parsing dominates the
	// cost), then merged in layer order.
	done := make([]*file, len(files))
	fcs := make([]*fileConfig, len(files))
	var wg sync.WaitGroup
	for i, fl := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := &file{src: diag.Source{File: fl.Path, Layer: fl.Layer}}
			done[i] = f
			defer guardParse(f, &fcs[i])
			if fl.Layer == LayerEmbedded && fl.Path == "" {
				f.data = defaultHCL
				fcs[i] = ld.parseHCLFile(f, "nexus.hcl", false)
			} else if data, ok := ld.read[fl.Path]; ok {
				// The bytes that were trusted, not the file as it is now.
				if rep := checkBytes(data, f.src); rep != nil {
					f.errs = append(f.errs, rep)
				} else {
					f.data = data
					fcs[i] = ld.parse(f)
				}
			} else if data, rep := readConfig(ld.abs(fl.Path), f.src); rep != nil {
				f.errs = append(f.errs, rep)
			} else {
				f.data = data
				fcs[i] = ld.parse(f)
			}
			f.sortErrs()
		}()
	}
	wg.Wait()
	for i, f := range done {
		errs = append(errs, f.errs...)
		cfg.Warnings = append(cfg.Warnings, f.warns...)
		if fcs[i] != nil && len(f.errs) == 0 {
			parts = append(parts, fcs[i])
		}
	}
	if len(errs) > 0 {
		return &Config{Files: files, Warnings: cfg.Warnings}, errs
	}
	merge(cfg, parts)
	if errs := check(cfg); len(errs) > 0 {
		return &Config{Files: files, Warnings: cfg.Warnings}, errs
	}
	return cfg, nil
}

// guardParse is the last resort at the loader's boundary: a panic while
// decoding a file (a bug in Nexus or a library, never the user's fault)
// becomes a diagnostic for that file, never a stack trace.
func guardParse(f *file, out **fileConfig) {
	r := recover()
	if r == nil {
		return
	}
	*out = nil
	f.errs = append(f.errs, &diag.Report{Title: errTitle, Source: f.src,
		Problem: fmt.Sprintf("Nexus failed while reading this file (%v)", r),
		Causes:  []string{"A bug in Nexus's config loader, set off by something in this file"},
		Fix:     []string{"Please report it with the file (secrets removed); meanwhile, simplify the part of the file you changed last."}})
}

// parse picks the front end by the file's name: *.hcl is HCL, *.hcl.json
// is HCL's JSON syntax, anything else is an mcpServers JSON file unless it
// does not start like one.
func (ld *loader) parse(f *file) *fileConfig {
	name := strings.ToLower(f.src.File)
	switch {
	case strings.HasSuffix(name, ".hcl"):
		return ld.parseHCLFile(f, f.src.File, false)
	case strings.HasSuffix(name, ".hcl.json"):
		return ld.parseHCLFile(f, f.src.File, true)
	case strings.HasSuffix(name, ".json"):
		return ld.parseJSONFile(f)
	}
	if t := bytes.TrimLeft(f.data, " \t\r\n"); len(t) > 0 && t[0] != '{' && t[0] != '/' {
		return ld.parseHCLFile(f, f.src.File, false)
	}
	return ld.parseJSONFile(f)
}

// Parse decodes an mcpServers JSON config held in memory; src names it in
// reports.
func Parse(data []byte, src diag.Source) (*Config, error) {
	ld, err := newLoader(Options{})
	if err != nil {
		return nil, err
	}
	return ld.parseBytes(data, src, false)
}

// ParseHCL decodes a nexus.hcl held in memory.
func ParseHCL(data []byte, src diag.Source) (*Config, error) {
	ld, err := newLoader(Options{})
	if err != nil {
		return nil, err
	}
	return ld.parseBytes(data, src, true)
}

func (ld *loader) parseBytes(data []byte, src diag.Source, hcl bool) (*Config, error) {
	f := &file{src: src}
	if rep := checkBytes(data, src); rep != nil {
		return nil, Errors{rep}
	}
	f.data = data
	var fc *fileConfig
	func() {
		defer guardParse(f, &fc)
		if hcl {
			name := src.File
			if name == "" {
				name = "nexus.hcl"
			}
			fc = ld.parseHCLFile(f, name, false)
		} else {
			fc = ld.parseJSONFile(f)
		}
	}()
	if len(f.errs) > 0 {
		f.sortErrs()
		return nil, f.errs
	}
	cfg := &Config{Warnings: f.warns}
	merge(cfg, []*fileConfig{fc})
	if errs := check(cfg); len(errs) > 0 {
		return nil, errs
	}
	return cfg, nil
}

// readConfig reads a config file with the checks outside input needs: a
// regular file, at most MaxFileSize (checked before reading), UTF-8.
func readConfig(path string, src diag.Source) ([]byte, *diag.Report) {
	bad := func(problem string, fix ...string) *diag.Report {
		return &diag.Report{Title: errTitle, Source: src, Problem: problem, Fix: fix}
	}
	fi, err := os.Stat(path)
	if err != nil {
		r := bad(fmt.Sprintf("cannot read the config file: %v", unwrapPathError(err)), "Check the path passed to --config or NEXUS_CONFIG.")
		r.Cause = err
		return nil, r
	}
	if fi.IsDir() {
		return nil, bad("the config path is a directory, not a file",
			"Point --config at a file such as "+filepath.Join(src.File, "nexus.hcl")+" or "+filepath.Join(src.File, "mcp.json")+".")
	}
	if fi.Size() > MaxFileSize {
		return nil, bad(fmt.Sprintf("the config file is %d bytes, over the 10 MiB limit", fi.Size()),
			"A config file this large is almost certainly not a config file; check the path.")
	}
	f, err := os.Open(path)
	if err != nil {
		r := bad(fmt.Sprintf("cannot open the config file: %v", unwrapPathError(err)), "Check the file's permissions.")
		r.Cause = err
		return nil, r
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, bad(fmt.Sprintf("reading the config file: %v", err))
	}
	if rep := checkBytes(data, src); rep != nil {
		return nil, rep
	}
	return data, nil
}

var bom = []byte("\xef\xbb\xbf")

func checkBytes(data []byte, src diag.Source) *diag.Report {
	if len(data) > MaxFileSize {
		return &diag.Report{Title: errTitle, Source: src, Problem: "the config file is over the 10 MiB limit"}
	}
	if len(bytes.TrimSpace(bytes.TrimPrefix(data, bom))) == 0 {
		// The example is in the file's own syntax.
		example := `Add a server, e.g. {"mcpServers": {"test": {"command": "nexus", "args": ["testserver"]}}}`
		if src.HCL() {
			example = "Add a server, e.g.\nserver \"test\" {\n  stdio {\n    command = \"nexus\"\n    args    = [\"testserver\"]\n  }\n}"
		}
		return &diag.Report{Title: errTitle, Source: src, Problem: "the config file is empty",
			Fix: []string{example, "or delete the file."}}
	}
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			off += n
		}
		f := &file{src: src, data: data}
		s := f.at(off)
		return &diag.Report{Title: errTitle, Source: s,
			Problem: fmt.Sprintf("the config file is not valid UTF-8 (byte 0x%02x at line %d, column %d)", data[off], s.Line, s.Column),
			Details: []diag.Section{{Lines: snippet(bytes.ToValidUTF8(data, []byte("\uFFFD")), s.Line, s.Column, 1, "")}},
			Causes:  []string{"The file was saved in another encoding (UTF-16 or Latin-1), or is not a text file"},
			Fix:     []string{"Save the file as UTF-8."}}
	}
	return nil
}

// merge layers the files' definitions: later wins per name, and the
// winner remembers whom it replaced.
func merge(cfg *Config, parts []*fileConfig) {
	servers := map[string]*Server{}
	plugins := map[string]*Plugin{}
	agents := map[string]*Agent{}
	inputs := map[string]Input{}
	var filters []*Filter
	for _, p := range parts {
		for _, s := range p.servers {
			if old := servers[s.Name]; old != nil {
				s.Overrides = append(append(s.Overrides, old.Overrides...), old.Source)
			}
			servers[s.Name] = s
		}
		for _, x := range p.plugins {
			if old := plugins[x.Name]; old != nil {
				x.Overrides = append(append(x.Overrides, old.Overrides...), old.Source)
			}
			plugins[x.Name] = x
		}
		for _, a := range p.agents {
			if old := agents[a.Name]; old != nil {
				a.Overrides = append(append(a.Overrides, old.Overrides...), old.Source)
			}
			agents[a.Name] = a
		}
		for _, f := range p.filters {
			// A filter keeps the place in the chain where it was first
			// defined; a later layer changes its settings, not its order.
			replaced := false
			for i, old := range filters {
				if old.Name == f.Name {
					f.Overrides = append(append(f.Overrides, old.Overrides...), old.Source)
					filters[i] = f
					replaced = true
				}
			}
			if !replaced {
				filters = append(filters, f)
			}
		}
		for _, in := range p.inputs {
			inputs[in.ID] = in
		}
		if p.hasRoots {
			cfg.Roots = p.roots
		}
		if lp := p.lock; lp != nil {
			cfg.Lock = lp // a later layer's lock block replaces the whole block
		}
		if a := p.audit; a != nil {
			cfg.Audit = a // likewise the audit block
		}
		if t := p.telemetry; t != nil {
			cfg.Telemetry = t // and the telemetry block
		}
		for name, v := range p.owned {
			if cfg.owned == nil {
				cfg.owned = map[string]ownedValue{}
			}
			cfg.owned[name] = v // and each block a component owns
		}
		if sm := p.sampling; sm != nil {
			// A later layer's sampling block replaces the whole block.
			if old := cfg.Sampling; old != nil {
				sm.Overrides = append(append(sm.Overrides, old.Overrides...), old.Source)
			}
			cfg.Sampling = sm
		}
		if g := p.gateway; g != nil {
			// A later layer's gateway block replaces the whole block.
			if old := cfg.Gateway; old != nil {
				g.Overrides = append(append(g.Overrides, old.Overrides...), old.Source)
			}
			cfg.Gateway = g
		}
	}
	for _, k := range sortedKeys(servers) {
		cfg.Servers = append(cfg.Servers, servers[k])
	}
	for _, k := range sortedKeys(plugins) {
		cfg.Plugins = append(cfg.Plugins, plugins[k])
	}
	for _, k := range sortedKeys(agents) {
		cfg.Agents = append(cfg.Agents, agents[k])
	}
	for _, k := range sortedKeys(inputs) {
		cfg.Inputs = append(cfg.Inputs, inputs[k])
	}
	cfg.Filters = filters
}

// check validates what only the merged config can: names that refer to
// definitions in other layers.
func check(cfg *Config) Errors {
	var errs Errors
	bad := func(src diag.Source, server, problem string, fix ...string) {
		errs = append(errs, &diag.Report{Title: errTitle, Server: server, Source: src, Problem: problem, Fix: fix})
	}
	pluginNames := func() []string {
		var n []string
		for _, p := range cfg.Plugins {
			n = append(n, p.Name)
		}
		return n
	}
	for _, s := range cfg.Servers {
		if s.Plugin != nil && cfg.Plugin(s.Plugin.Name) == nil {
			bad(s.Source, s.Name, fmt.Sprintf("the transport plugin %q is not defined in any config layer.%s", s.Plugin.Name, didYouMean(s.Plugin.Name, pluginNames())),
				fmt.Sprintf("Add it: plugin %q { path = \"./path/to/binary\" }", s.Plugin.Name))
		}
	}
	for _, f := range cfg.Filters {
		if f.Plugin != "" && cfg.Plugin(f.Plugin) == nil {
			bad(f.Source, "", fmt.Sprintf("filter %q names plugin %q, which is not defined in any config layer.%s", f.Name, f.Plugin, didYouMean(f.Plugin, pluginNames())),
				fmt.Sprintf("Add it: plugin %q { path = \"./path/to/binary\" }", f.Plugin))
		}
	}
	for _, a := range cfg.Agents {
		for _, n := range a.Servers {
			if cfg.Server(n) == nil {
				cfg.Warnings = append(cfg.Warnings, Warning{Source: a.Source, Subject: subject("agent", a.Name),
					Message: fmt.Sprintf("server %q is not configured in any layer.%s", n, didYouMean(n, cfg.Names()))})
			}
		}
	}
	at := func(src diag.Source, lines []string, problem string, fix ...string) {
		r := &diag.Report{Title: errTitle, Source: src, Problem: problem, Fix: fix}
		if len(lines) > 0 {
			r.Details = []diag.Section{{Lines: lines}}
		}
		errs = append(errs, r)
	}
	checkGateway(cfg, at)
	checkTokens(cfg, at)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Source.File < errs[j].Source.File })
	return errs
}

// envFile reads a server's envFile.
func (ld *loader) envFile(p string) (map[string]string, string) {
	env, bad := readEnvFile(p)
	if bad != "" && ld.opts.AllowUnset {
		return nil, ""
	}
	return env, bad
}

// expander makes the ${...} resolver for a file with the given inputs.
func (ld *loader) expander(inputs map[string]Input) *expander {
	return &expander{lookup: ld.lookup, home: ld.home, dir: ld.dir, inputs: inputs, ask: ld.ask, allowUnset: ld.opts.AllowUnset}
}

// ask finds an input's value: NEXUS_INPUT_<ID>, else the person at the
// terminal, else its default. Each input is asked for once per load, one
// question at a time.
func (ld *loader) ask(in Input) (string, bool, error) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if v, ok := ld.answers[in.ID]; ok {
		return v, true, nil
	}
	v, ok := ld.lookup(in.EnvName())
	if !ok && ld.opts.Prompter != nil && in.Type == "promptString" {
		var err error
		if v, err = ld.opts.Prompter.Prompt(in); err != nil {
			return "", false, fmt.Errorf("asking for input %q: %w", in.ID, err)
		}
		ok = true
	}
	if !ok && in.Default != "" {
		v, ok = in.Default, true
	}
	if ok {
		ld.answers[in.ID] = v
	}
	return v, ok, nil
}
