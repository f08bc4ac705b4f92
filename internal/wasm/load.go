package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/nexus-mcp/nexus/internal/bounded"
	"github.com/nexus-mcp/nexus/internal/diag"
	abi "github.com/nexus-mcp/nexus/internal/filterabi"
)

// Defaults of a Spec's limits.
const (
	DefaultMemoryMB = 32
	DefaultTimeout  = 100 * time.Millisecond
	DefaultMaxCalls = 100_000
	// MaxModuleSize bounds a module file.
	MaxModuleSize = 64 << 20
	// MaxOutput bounds a decision.
	MaxOutput = abi.MaxOutput
)

// Spec says which module to load as a filter and how to bound it.
type Spec struct {
	Name   string          // the filter's name in the config; "" = the file's base name
	Path   string          // the .wasm file
	SHA256 string          // hex; "" = not pinned
	Config json.RawMessage // handed to nx_configure; nil = null

	MemoryMB int           // linear memory per instance; 0 = 32
	Timeout  time.Duration // per call; 0 = 100ms
	Pool     int           // instances; 0 = the number of CPUs
	MaxCalls int           // calls before an instance is replaced; 0 = 100000, <0 = never

	// Source is where the filter was configured, for error reports.
	Source diag.Source

	// ABI is how the module is called: ABINexus, ABIOPA, or "" to tell by
	// its exports.
	ABI string
	// Entrypoint is the rule of an OPA policy whose value decides
	// ("nexus/decision" or "data.nexus.decision"); "" = the module's only
	// entrypoint.
	Entrypoint string
	// DataFile is a JSON file merged into an OPA policy's data document,
	// over the bundle's data and under Config (which, for an OPA policy, is
	// data too).
	DataFile string
}

func (s Spec) withDefaults() Spec {
	if s.Name == "" {
		s.Name = filepath.Base(s.Path)
		for _, ext := range []string{".wasm", ".tar.gz", ".tgz"} {
			s.Name = strings.TrimSuffix(s.Name, ext)
		}
	}
	if s.MemoryMB <= 0 {
		s.MemoryMB = DefaultMemoryMB
	}
	if s.Timeout <= 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Pool <= 0 {
		s.Pool = runtime.NumCPU()
	}
	if s.MaxCalls == 0 {
		s.MaxCalls = DefaultMaxCalls
	}
	if len(bytes.TrimSpace(s.Config)) == 0 {
		s.Config = json.RawMessage("null")
	}
	return s
}

// Info describes a module: what `nexus filter inspect` prints.
type Info struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// ABI is "1.<minor>" for a module that implements ABI v1 (the minor as
	// nx_abi_minor reports it), else "".
	ABI      string   `json:"abi"`
	ABIMinor int      `json:"abi_minor"`
	Exports  []Symbol `json:"exports"`
	Imports  []Symbol `json:"imports"`
	// MemoryMin and MemoryMax are the pages (64 KiB) the module's memory
	// declares; MemoryMax 0 means no maximum.
	MemoryMin uint32 `json:"memory_min_pages"`
	MemoryMax uint32 `json:"memory_max_pages,omitempty"`
	// Problems lists what keeps the module from loading as a filter.
	Problems []string `json:"problems,omitempty"`
}

// Symbol is an export or an import.
type Symbol struct {
	Module    string `json:"module,omitempty"`    // imports only
	Name      string `json:"name"`                //
	Kind      string `json:"kind"`                // "func" or "memory"
	Signature string `json:"signature,omitempty"` // "(i32, i32) -> i64" for functions
}

func (s Symbol) String() string {
	name := s.Name
	if s.Module != "" {
		name = s.Module + "." + s.Name
	}
	if s.Kind == "func" {
		return name + " " + s.Signature
	}
	return name + " (" + s.Kind + ")"
}

// sig is a function type.
type sig struct{ params, results []api.ValueType }

func (s sig) String() string {
	return "(" + types(s.params) + ") -> " + func() string {
		if len(s.results) == 1 {
			return api.ValueTypeName(s.results[0])
		}
		return "(" + types(s.results) + ")"
	}()
}

func types(ts []api.ValueType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = api.ValueTypeName(t)
	}
	return strings.Join(names, ", ")
}

func defSig(d api.FunctionDefinition) sig { return sig{d.ParamTypes(), d.ResultTypes()} }

func (s sig) equal(o sig) bool {
	return bytes.Equal(s.params, o.params) && bytes.Equal(s.results, o.results)
}

var (
	i32, i64 = api.ValueTypeI32, api.ValueTypeI64
	// The guest's exports (ABI v1).
	abiExports = []struct {
		name string
		sig  sig
	}{
		{abi.ExportMarker, sig{}},
		{abi.ExportMinor, sig{nil, []api.ValueType{i32}}},
		{abi.ExportInputBuf, sig{[]api.ValueType{i32}, []api.ValueType{i32}}},
		{abi.ExportConfigure, sig{[]api.ValueType{i32, i32}, []api.ValueType{i32}}},
		{abi.ExportOnEvent, sig{[]api.ValueType{i32, i32}, []api.ValueType{i64}}},
	}
	// The host functions (module "nexus").
	hostSigs = map[string]sig{
		abi.ImportLog:         {[]api.ValueType{i32, i32, i32}, nil},
		abi.ImportField:       {[]api.ValueType{i32, i32, i32}, []api.ValueType{i32}},
		abi.ImportContentText: {[]api.ValueType{i32, i32, i32}, []api.ValueType{i32}},
	}
	markerRE = regexp.MustCompile(`^nexus_filter_abi_v([0-9]+)$`)
)

const wasiModule = "wasi_snapshot_preview1"

// module is a module file read, verified and compiled.
type module struct {
	info     *Info
	code     []byte
	wr       wazero.Runtime
	compiled wazero.CompiledModule
	abiErr   error // ErrABI or ErrExports when info.Problems is not empty

	opa    bool           // a Rego policy built by opa build -t wasm
	bundle map[string]any // the data of the OPA bundle the module came in

	// interrupt: the module counts fuel in every loop and yields to the
	// host (interrupt.go); otherwise wazero's own checks stop it.
	interrupt bool
}

// compileCode compiles code with a fuel check in every loop, or, when
// the module cannot take them, with wazero's checks, in a runtime of its
// own.
func (r *Runtime) compileCode(ctx context.Context, code []byte) (wazero.Runtime, wazero.CompiledModule, bool, error) {
	compile := func(code []byte, interrupt bool) (wazero.Runtime, wazero.CompiledModule, error) {
		cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(!interrupt).WithCompilationCache(r.cache)
		wr := wazero.NewRuntimeWithConfig(ctx, cfg)
		unlock := r.lockCompile(sha256.Sum256(code))
		compiled, err := wr.CompileModule(ctx, code)
		unlock()
		if err != nil {
			wr.Close(ctx)
			return nil, nil, err
		}
		return wr, compiled, nil
	}
	if checked, err := interruptible(code); err == nil {
		if wr, compiled, err := compile(checked, true); err == nil {
			return wr, compiled, true, nil
		}
	}
	wr, compiled, err := compile(code, false)
	return wr, compiled, false, err
}

// loadErr is a failed load of spec's module, of kind, wrapping err.
func loadErr(spec Spec, kind LoadKind, err error, detail string) *LoadError {
	return &LoadError{Filter: spec.Name, Path: spec.Path, Err: err, Kind: kind, Source: spec.Source, Detail: detail}
}

// read reads the module file, checks its hash and its header. The hash
// (some milliseconds for a Go module) is computed only when it is pinned
// or hash is set; Filter.Inspect computes it later when asked.
func read(spec Spec, hash bool) ([]byte, string, error) {
	code, err := bounded.ReadFile(spec.Path, MaxModuleSize)
	var (
		tl *bounded.TooLargeError
		nr *bounded.NotRegularError
	)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", loadErr(spec, LoadMissing, fmt.Errorf("%w: %s", ErrNotFound, spec.Path), "")
	case errors.As(err, &nr) && nr.Mode.IsDir():
		return nil, "", loadErr(spec, LoadDirectory, fmt.Errorf("%w: %s is a directory", ErrNotFound, spec.Path), "")
	case errors.As(err, &nr):
		return nil, "", loadErr(spec, LoadNotFile, fmt.Errorf("%w: %v", ErrNotFound, err), err.Error())
	case errors.As(err, &tl):
		e := loadErr(spec, LoadTooLarge, fmt.Errorf("%w: %d bytes", ErrModuleTooLarge, tl.Size), "")
		e.Size, e.Limit = uint64(max(tl.Size, tl.Max+1)), MaxModuleSize
		return nil, "", e
	case err != nil:
		return nil, "", loadErr(spec, LoadRead, fmt.Errorf("%w: %v", ErrNotFound, err), err.Error())
	}
	var sum string
	if spec.SHA256 != "" || hash {
		sum = sha256Hex(code)
	}
	if spec.SHA256 != "" && !strings.EqualFold(strings.TrimSpace(spec.SHA256), sum) {
		pinned := strings.ToLower(spec.SHA256)
		e := loadErr(spec, LoadSHA256, fmt.Errorf("%w: pinned %s, file %s", ErrSHA256, pinned, sum), "")
		e.Pinned, e.Sum = pinned, sum
		return nil, "", e
	}
	if what := notWASM(code); what != "" && !isGzip(code) {
		return nil, "", loadErr(spec, LoadNotWASM, fmt.Errorf("%w: %s", ErrNotWASM, what), what)
	}
	return code, sum, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// notWASM says what code is when it is not a core WebAssembly module.
func notWASM(code []byte) string {
	switch {
	case len(code) == 0:
		return "the file is empty"
	case bytes.HasPrefix(code, []byte("\x00asm")):
		if len(code) < 8 {
			return "the file ends inside the header"
		}
		if v := code[4:8]; !bytes.Equal(v, []byte{1, 0, 0, 0}) {
			return fmt.Sprintf("binary format version %x, not 1 (a WebAssembly component? Nexus runs core modules)", v)
		}
		return ""
	case bytes.HasPrefix(code, []byte("\x7fELF")):
		return "it is an ELF executable (built without GOOS=wasip1 GOARCH=wasm?)"
	case bytes.HasPrefix(code, []byte("MZ")):
		return "it is a Windows executable (built without GOOS=wasip1 GOARCH=wasm?)"
	case bytes.HasPrefix(code, []byte{0xcf, 0xfa, 0xed, 0xfe}), bytes.HasPrefix(code, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return "it is a macOS executable (built without GOOS=wasip1 GOARCH=wasm?)"
	case isWAT(code):
		return "it is WebAssembly text (WAT); compile it first (wat2wasm)"
	}
	n := min(len(code), 4)
	return fmt.Sprintf("it starts with % x, and a .wasm file starts with 00 61 73 6d (\\0asm)", code[:n])
}

// isWAT reports whether code looks like WebAssembly text: "(module" after
// blank lines and ;; comments.
func isWAT(code []byte) bool {
	rest := code[:min(len(code), 64<<10)]
	for {
		rest = bytes.TrimLeft(rest, " \t\r\n")
		if !bytes.HasPrefix(rest, []byte(";;")) {
			return bytes.HasPrefix(rest, []byte("(module"))
		}
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return false
		}
		rest = rest[i+1:]
	}
}

// compile reads, verifies and compiles the module of spec and checks it
// against the ABI. It makes the wazero runtime the filter runs in.
func (r *Runtime) compile(ctx context.Context, spec Spec, hash bool) (*module, error) {
	if r.isClosed() {
		return nil, ErrClosed
	}
	code, sum, err := read(spec, hash)
	if err != nil {
		return nil, err
	}
	file := code
	var bundle map[string]any
	if isGzip(code) {
		if code, bundle, err = readBundle(code); err != nil {
			return nil, loadErr(spec, LoadBundle, fmt.Errorf("%w: %v", ErrNotWASM, err), err.Error())
		}
		if what := notWASM(code); what != "" {
			return nil, loadErr(spec, LoadBundleNotWASM, fmt.Errorf("%w: %s", ErrNotWASM, what), what)
		}
	}
	looksOPA := isOPA(code)
	opa := spec.ABI == ABIOPA || (spec.ABI == "" && looksOPA)
	if opa {
		if !looksOPA {
			err = fmt.Errorf("%w: it lacks OPA's exports (opa_eval_ctx_new, opa_json_dump)", errOPAModule)
		} else {
			code, err = ownMemory(code)
		}
		if err != nil {
			return nil, loadErr(spec, LoadNotOPA, fmt.Errorf("%w: %v", ErrExports, err), err.Error())
		}
	}
	capped, err := capTables(code)
	if err != nil {
		return nil, loadErr(spec, LoadTables, fmt.Errorf("%w: %v", ErrCompile, err), err.Error())
	}
	wr, compiled, interrupt, err := r.compileCode(ctx, capped)
	if err != nil {
		return nil, loadErr(spec, LoadCompile, fmt.Errorf("%w: %v", ErrCompile, err), err.Error())
	}
	m := &module{code: file, wr: wr, compiled: compiled, opa: opa, bundle: bundle, interrupt: interrupt}
	m.info = &Info{Name: spec.Name, Path: spec.Path, Size: int64(len(file)), SHA256: sum}
	if opa {
		fillSymbols(compiled, m.info)
		m.abiErr = checkOPA(compiled, m.info)
		m.info.ABI = ABIOPA
	} else {
		m.abiErr = check(compiled, m.info)
	}
	return m, nil
}

// abi names the ABI the module speaks, at the minor version its first
// instance reported: "1.1", or "opa 1.3" for a Rego policy.
func (m *module) abi(minor int) string {
	if m.opa {
		return fmt.Sprintf("opa 1.%d", minor)
	}
	return fmt.Sprintf("%d.%d", abi.ABIMajor, minor)
}

func (m *module) close(ctx context.Context) {
	m.wr.Close(ctx)
}

// check fills info's exports, imports and memory, and lists in
// info.Problems what does not match ABI v1. It returns ErrABI when the
// marker is missing (not a Nexus filter, or another major version),
// ErrExports for other problems, nil when there are none.
func check(cm wazero.CompiledModule, info *Info) error {
	fillSymbols(cm, info)
	funcs := cm.ExportedFunctions()
	mems := cm.ExportedMemories()
	var problems []string
	if _, ok := funcs[abi.ExportMarker]; !ok {
		var others []string
		for name := range funcs {
			if m := markerRE.FindStringSubmatch(name); m != nil {
				others = append(others, "v"+m[1])
			}
		}
		if len(others) > 0 {
			sort.Strings(others)
			info.Problems = []string{fmt.Sprintf("the module is built for filter ABI %s (it exports nexus_filter_abi_%s); this Nexus speaks ABI v1", strings.Join(others, ", "), others[0])}
		} else {
			info.Problems = []string{fmt.Sprintf("no %s export: the module is not a Nexus filter (its exports: %s)", abi.ExportMarker, exportNames(info.Exports))}
		}
		return ErrABI
	}
	for _, want := range abiExports {
		d, ok := funcs[want.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing export: func %s %s", want.name, want.sig))
		case !defSig(d).equal(want.sig):
			problems = append(problems, fmt.Sprintf("wrong signature: %s is %s; ABI v1 needs %s", want.name, defSig(d), want.sig))
		}
	}
	_, start := funcs["_start"]
	if _, init := funcs["_initialize"]; start && !init {
		problems = append(problems, "exports _start, not _initialize: it is built as a command, whose runtime the host never starts; build it as a reactor (Go: -buildmode=c-shared)")
	}
	if _, ok := mems[abi.ExportMemory]; !ok {
		problems = append(problems, "missing export: memory \"memory\" (the filter's linear memory)")
	}
	for _, d := range cm.ImportedMemories() {
		mod, name, _ := d.Import()
		problems = append(problems, fmt.Sprintf("imports its memory (%s.%s); a filter defines and exports its own", mod, name))
	}
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		switch mod {
		case abi.HostModule:
			want, ok := hostSigs[name]
			if !ok {
				problems = append(problems, fmt.Sprintf("imports %s.%s, which this Nexus does not provide (a newer ABI minor version?)", mod, name))
			} else if got := defSig(d); !got.equal(want) {
				problems = append(problems, fmt.Sprintf("wrong signature: import %s.%s is %s; ABI v1 provides %s", mod, name, got, want))
			}
		case wasiModule:
		default:
			problems = append(problems, fmt.Sprintf("imports %s.%s; a filter may import only from %q and %q", mod, name, abi.HostModule, wasiModule))
		}
	}
	info.Problems = problems
	if len(problems) > 0 {
		return ErrExports
	}
	return nil
}

// fillSymbols lists a module's exports, imports and memory in info.
func fillSymbols(cm wazero.CompiledModule, info *Info) {
	funcs := cm.ExportedFunctions()
	mems := cm.ExportedMemories()
	for name, d := range funcs {
		info.Exports = append(info.Exports, Symbol{Name: name, Kind: "func", Signature: defSig(d).String()})
	}
	for name, d := range mems {
		info.Exports = append(info.Exports, Symbol{Name: name, Kind: "memory"})
		if name == abi.ExportMemory {
			info.MemoryMin = d.Min()
			if max, ok := d.Max(); ok {
				info.MemoryMax = max
			}
		}
	}
	sort.Slice(info.Exports, func(i, j int) bool { return info.Exports[i].Name < info.Exports[j].Name })
	for _, d := range cm.ImportedFunctions() {
		mod, name, _ := d.Import()
		info.Imports = append(info.Imports, Symbol{Module: mod, Name: name, Kind: "func", Signature: defSig(d).String()})
	}
	for _, d := range cm.ImportedMemories() {
		mod, name, _ := d.Import()
		info.Imports = append(info.Imports, Symbol{Module: mod, Name: name, Kind: "memory"})
	}
}

func exportNames(syms []Symbol) string {
	if len(syms) == 0 {
		return "none"
	}
	names := make([]string, 0, len(syms))
	for _, s := range syms {
		names = append(names, s.Name)
	}
	if len(names) > 8 {
		names = append(names[:8], "...")
	}
	return strings.Join(names, ", ")
}

// MiB is n bytes as people read a module's size or memory: "64 MiB",
// "1.5 MiB".
func MiB(n uint64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// Inspect reads and checks the module of spec without running it as a
// filter: what `nexus filter inspect` prints. Only Name, Path and SHA256
// of spec matter. Problems with the ABI are listed in Info.Problems; the
// error (a *LoadError) is for a module that cannot be read, does not
// match its sha256, or does not compile. When the module implements the
// ABI, Inspect starts one instance (without config) to ask for its minor
// version.
func (r *Runtime) Inspect(ctx context.Context, spec Spec) (*Info, error) {
	if !r.begin() {
		return nil, ErrClosed
	}
	defer r.loads.Done()
	spec = Spec{Name: spec.Name, Path: spec.Path, SHA256: spec.SHA256}.withDefaults()
	m, err := r.compile(ctx, spec, true)
	if err != nil {
		return nil, err
	}
	defer m.close(ctx)
	if m.abiErr == nil {
		f := newFilter(r, spec, m)
		inst, err := f.start(ctx, false)
		if err != nil {
			m.info.Problems = append(m.info.Problems, err.Error())
		} else {
			inst.close(ctx)
		}
		if f.minor >= 0 {
			m.info.ABIMinor, m.info.ABI = f.minor, m.abi(f.minor)
		}
	}
	return m.info, nil
}

// Load loads spec's module as a filter: it reads the file, verifies the
// sha256 (before compiling anything), compiles it (from the cache when it
// can), checks the ABI and every export signature, and starts one instance
// with the config, so a filter that cannot start or refuses its config
// fails here, at load, not on the first call. Errors are *LoadError
// values (internal/explain reports on them).
func (r *Runtime) Load(ctx context.Context, spec Spec) (*Filter, error) {
	if !r.begin() {
		return nil, ErrClosed
	}
	defer r.loads.Done()
	spec = spec.withDefaults()
	m, err := r.compile(ctx, spec, false)
	if err != nil {
		return nil, err
	}
	if m.abiErr != nil {
		m.close(ctx)
		kind, err := LoadABI, fmt.Errorf("%w: %s", m.abiErr, strings.Join(m.info.Problems, "; "))
		if m.opa {
			kind = LoadOPAABI
		}
		e := loadErr(spec, kind, err, "")
		e.Problems = m.info.Problems
		return nil, e
	}
	limit := uint64(spec.MemoryMB) << 20
	if need := uint64(m.info.MemoryMin) << 16; need > limit {
		m.close(ctx)
		e := loadErr(spec, LoadMemory, fmt.Errorf("%w: the module needs %s at start, its limit is %s", ErrMemoryLimit, MiB(need), MiB(limit)), "")
		e.Size, e.Limit = need, limit
		return nil, e
	}
	if m.opa {
		data, err := opaData(m.bundle, spec.DataFile, spec.Config)
		if err != nil {
			m.close(ctx)
			return nil, loadErr(spec, LoadOPAData, fmt.Errorf("%w: %v", ErrConfigure, err), err.Error())
		}
		spec.Config = data
	}
	f := newFilter(r, spec, m)
	inst, err := f.start(ctx, true)
	if err != nil {
		m.close(ctx)
		var oe *opaLoadError
		if errors.As(err, &oe) {
			e := loadErr(spec, oe.kind, fmt.Errorf("%w: %v", ErrExports, err), oe.problem)
			e.Problems, e.Names, e.Entrypoint = oe.lines, oe.names, oe.want
			return nil, e
		}
		var ce *CallError
		cause := err
		if errors.As(err, &ce) {
			cause = ce.Err
		}
		if errors.Is(err, ErrConfigure) {
			return nil, loadErr(spec, LoadConfigure, err, unwrapAll(cause))
		}
		return nil, loadErr(spec, LoadStart, fmt.Errorf("%w: %v", ErrStart, err), cause.Error())
	}
	f.put(inst)
	m.info.ABIMinor, m.info.ABI = f.minor, m.abi(f.minor)
	if !m.opa && f.minor > abi.ABIMinor {
		r.logger.Warn("filter was built for a newer ABI minor version; it loads, since every host function it imports exists", "filter", spec.Name, "abi", fmt.Sprintf("1.%d", f.minor), "host_abi", fmt.Sprintf("1.%d", abi.ABIMinor))
	}
	if err := r.add(f); err != nil {
		f.Close(ctx)
		return nil, err
	}
	return f, nil
}

// unwrapAll strips the sentinel prefix of a configure error so the
// report shows the filter's own words.
func unwrapAll(err error) string {
	s := err.Error()
	return strings.TrimPrefix(s, ErrConfigure.Error()+": ")
}
