package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/wasm"
	"github.com/nexus-mcp/nexus/sdk/event"
)

// A WASM filter runs in the chain as a filter block places it; the
// functions below run one on its own, as `nexus filter test` and
// `nexus filter inspect` do: for a filter's author, or a program that
// checks a module before it configures it.

// FilterSpec is a WASM filter to run on its own (OpenFilter), with what
// its filter block would set.
type FilterSpec struct {
	Path   string          // the .wasm file (or an OPA bundle)
	SHA256 string          // hex; "" = not pinned
	Config json.RawMessage // the filter's config; nil = null
	// MemoryMB is the linear memory (0: 32 MiB), Timeout the limit of a
	// call (0: 100 ms).
	MemoryMB int
	Timeout  time.Duration
	// Entrypoint is the rule of an OPA policy whose value decides ("" =
	// its only entrypoint); DataFile a JSON file merged into its data,
	// under Config.
	Entrypoint string
	DataFile   string
}

// WASMFilter is one WASM filter loaded on its own runtime (OpenFilter).
// Close releases both.
type WASMFilter struct {
	rt *wasm.Runtime
	f  *wasm.Filter
}

// FilterResult is a call's decision, how long it took and what the filter
// logged.
type FilterResult struct {
	Decision event.Decision
	Duration time.Duration
	Log      []FilterLog
}

// FilterLog is one line a filter logged: on its log (Level says how
// loud) or on its stdout or stderr (Stream).
type FilterLog struct {
	Level  string // trace, debug, info, warn, error
	Stream string // "log", "stdout" or "stderr"
	Text   string
}

// OpenFilter loads the filter spec names, checking its sha256 first; what
// it logs goes to its calls' FilterResult.Log, not to a logger.
func OpenFilter(ctx context.Context, spec FilterSpec) (*WASMFilter, error) {
	rt, err := wasm.NewRuntime(ctx, wasm.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		return nil, hostErr(err)
	}
	f, err := rt.Load(ctx, wasm.Spec{Path: spec.Path, SHA256: spec.SHA256, Config: spec.Config, MemoryMB: spec.MemoryMB,
		Timeout: spec.Timeout, Pool: 1, Entrypoint: spec.Entrypoint, DataFile: spec.DataFile})
	if err != nil {
		rt.Close(ctx)
		return nil, hostErr(err)
	}
	return &WASMFilter{rt: rt, f: f}, nil
}

// Name is the filter's name: its file's, without the extension.
func (w *WASMFilter) Name() string { return w.f.Name() }

// Call decides one event. The error is the filter's failure (a trap, a
// timeout, an invalid decision), a *FilterCallError; the result has its
// log either way.
func (w *WASMFilter) Call(ctx context.Context, e *event.Event) (FilterResult, error) {
	res, err := w.f.Call(ctx, e)
	out := FilterResult{Decision: res.Decision, Duration: res.Duration}
	for _, l := range res.Log {
		out.Log = append(out.Log, FilterLog{Level: l.Level.String(), Stream: l.Stream, Text: l.Text})
	}
	return out, hostErr(err)
}

// Close unloads the filter and its runtime.
func (w *WASMFilter) Close(ctx context.Context) error {
	return hostErr(errors.Join(w.f.Close(ctx), w.rt.Close(ctx)))
}

// FilterInfo is what InspectFilter read of a module.
type FilterInfo struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// ABI is "1.<minor>" for a module that implements the Nexus filter
	// ABI v1, "opa..." for a Rego policy built by opa build -t wasm, else
	// "".
	ABI      string         `json:"abi"`
	ABIMinor int            `json:"abi_minor"`
	Exports  []FilterSymbol `json:"exports"`
	Imports  []FilterSymbol `json:"imports"`
	// MemoryMin and MemoryMax are the pages (64 KiB) the module's memory
	// declares; MemoryMax 0 means no maximum.
	MemoryMin uint32 `json:"memory_min_pages"`
	MemoryMax uint32 `json:"memory_max_pages,omitempty"`
	// Problems lists what keeps the module from loading as a filter.
	Problems []string `json:"problems,omitempty"`
}

// OPA says whether the module is a Rego policy (OPA's WebAssembly ABI).
func (i *FilterInfo) OPA() bool { return strings.HasPrefix(i.ABI, wasm.ABIOPA) }

// FilterSymbol is an export or an import of a module.
type FilterSymbol struct {
	Module    string `json:"module,omitempty"`    // imports only
	Name      string `json:"name"`                //
	Kind      string `json:"kind"`                // "func" or "memory"
	Signature string `json:"signature,omitempty"` // "(i32, i32) -> i64" for functions
}

func (s FilterSymbol) String() string { return wasm.Symbol(s).String() }

// InspectFilter reads the module at path (checking sha256 first when
// set) without running it: its ABI, exports and imports, memory and
// what keeps it from loading as a filter. A file that is not WebAssembly
// is an error.
func InspectFilter(ctx context.Context, path, sha256 string) (*FilterInfo, error) {
	rt, err := wasm.NewRuntime(ctx, wasm.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		return nil, hostErr(err)
	}
	defer rt.Close(ctx)
	info, err := rt.Inspect(ctx, wasm.Spec{Path: path, SHA256: sha256})
	if err != nil {
		return nil, hostErr(err)
	}
	out := &FilterInfo{Name: info.Name, Path: info.Path, Size: info.Size, SHA256: info.SHA256, ABI: info.ABI, ABIMinor: info.ABIMinor,
		MemoryMin: info.MemoryMin, MemoryMax: info.MemoryMax, Problems: info.Problems}
	out.Exports, out.Imports = symbols(info.Exports), symbols(info.Imports)
	return out, nil
}

// symbols keeps nil nil and empty empty, so the JSON is wasm's.
func symbols(in []wasm.Symbol) []FilterSymbol {
	if in == nil {
		return nil
	}
	out := make([]FilterSymbol, len(in))
	for i, s := range in {
		out[i] = FilterSymbol(s)
	}
	return out
}

// The conversions above keep host's types in step with wasm's.
var _ = FilterSymbol(wasm.Symbol{})
