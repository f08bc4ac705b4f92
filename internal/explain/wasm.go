package explain

import (
	"fmt"
	"strings"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/wasm"
)

const (
	wasmBuildFix = "Build a Go filter with the SDK: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o NAME.wasm ./filters/NAME (make filters builds the first-party ones)"
	opaBuildFix  = "Build the policy with OPA: opa build -t wasm -e PACKAGE/RULE policy.rego (the bundle.tar.gz it writes, or the policy.wasm inside, is what wasm points at)"
	abiFix       = "In another language, follow sdk/filter/ABI.md: the exports, their signatures and the host functions."
)

// wasmLoad is the report on a module that could not be loaded as a
// filter: what is wrong with it and what to do, by kind.
func wasmLoad(e *wasm.LoadError) *diag.Report {
	var (
		problem     string
		details     []string
		causes, fix []string
		path, d     = e.Path, e.Detail
	)
	switch e.Kind {
	case wasm.LoadMissing:
		problem = fmt.Sprintf("the module %s does not exist", path)
		causes = []string{"The filter has not been built yet.", "The wasm path in the filter block is wrong (a relative path is relative to the config file)."}
		fix = []string{wasmBuildFix, "Check the wasm path of the filter block."}
	case wasm.LoadDirectory:
		problem = fmt.Sprintf("%s is a directory, not a .wasm module", path)
		fix = []string{"Point wasm at the built .wasm file."}
	case wasm.LoadNotFile:
		problem = d
		fix = []string{"Point wasm at the built .wasm file."}
	case wasm.LoadRead:
		problem = "cannot read the module: " + d
	case wasm.LoadTooLarge:
		problem = fmt.Sprintf("%s is %s, over the %s limit for a module", path, wasm.MiB(e.Size), wasm.MiB(e.Limit))
	case wasm.LoadSHA256:
		return &diag.Report{
			Title:   "WASM Filter Load Failed",
			Source:  e.Source,
			Problem: fmt.Sprintf("filter %q: the sha256 of %s does not match the pinned one", e.Filter, path),
			Details: []diag.Section{{Heading: "sha256", Lines: []string{"pinned: " + e.Pinned, "file:   " + e.Sum}}},
			Causes:  []string{"The module was rebuilt or replaced after its hash was pinned.", "The file was tampered with."},
			Fix:     []string{fmt.Sprintf("If you rebuilt it yourself, pin the new hash: sha256 = %q", e.Sum), "Otherwise restore the module that was pinned."},
			Cause:   e,
		}
	case wasm.LoadNotWASM:
		problem = fmt.Sprintf("%s is not a WebAssembly module: %s", path, d)
		fix = []string{wasmBuildFix, "Modules in other languages: anything that compiles to a WebAssembly core module and follows sdk/filter/ABI.md."}
	case wasm.LoadBundle:
		problem = fmt.Sprintf("%s is gzip, so it was read as an OPA bundle, and %s", path, d)
		fix = []string{opaBuildFix}
	case wasm.LoadBundleNotWASM:
		problem = fmt.Sprintf("the module in the bundle %s is not a WebAssembly module: %s", path, d)
		fix = []string{opaBuildFix}
	case wasm.LoadNotOPA:
		problem = fmt.Sprintf("%s is not a Rego policy built for WebAssembly: %s", path, d)
		causes = []string{"abi = \"opa\" names a module that opa build did not make."}
		fix = []string{opaBuildFix}
	case wasm.LoadTables:
		problem = fmt.Sprintf("%s is refused: %s", path, d)
		causes = []string{"A hand-written or hostile module declares a table larger than any filter needs."}
		fix = []string{"Declare tables of at most " + fmt.Sprint(wasm.MaxTableElems) + " elements; modules built by the Go toolchain stay well under it."}
	case wasm.LoadCompile:
		problem = fmt.Sprintf("%s is not a valid WebAssembly module: %s", path, d)
		causes = []string{"The file is truncated or corrupt.", "It uses a WebAssembly feature this runtime does not support."}
		fix = []string{wasmBuildFix}
	case wasm.LoadOPAABI:
		problem = fmt.Sprintf("%s does not implement OPA's WebAssembly ABI as Nexus calls it", path)
		details = e.Problems
		fix = []string{opaBuildFix}
	case wasm.LoadABI:
		problem = fmt.Sprintf("%s does not implement the Nexus filter ABI v1", path)
		if len(e.Problems) == 1 {
			problem = fmt.Sprintf("%s: %s", path, e.Problems[0])
		} else {
			details = e.Problems
		}
		fix = []string{wasmBuildFix, abiFix}
	case wasm.LoadMemory:
		problem = fmt.Sprintf("the module needs %s of memory to start, over its limit of %s", wasm.MiB(e.Size), wasm.MiB(e.Limit))
		fix = []string{fmt.Sprintf("Raise the limit: limits { memory_mb = %d } in the filter block.", (e.Size+(1<<20)-1)>>20)}
	case wasm.LoadOPAData:
		problem = "the policy's data document: " + d
		fix = []string{"The data of a Rego filter is its config block, over data_file, over the bundle's data.json; each must be a JSON object."}
	case wasm.LoadOPAImpure:
		problem, details = d, e.Problems
		fix = []string{"Fetch what the policy needs ahead of time and give it as data: the filter's config, or data_file.", "Remove the calls to " + strings.Join(e.Names, ", ") + " from the policy."}
	case wasm.LoadOPAMissing:
		problem, details = d, e.Problems
		fix = []string{"Rewrite the rules without " + strings.Join(e.Names, ", ") + ". Besides those OPA compiles into the module, Nexus provides: " + strings.Join(wasm.OPABuiltins(), ", ") + "."}
	case wasm.LoadOPAEntrypoints:
		problem, details = d, e.Problems
		first := "nexus/decision"
		if len(e.Problems) > 0 {
			first = e.Problems[0]
		}
		fix = []string{fmt.Sprintf("Say which one decides: entrypoint = %q in the filter block.", first)}
	case wasm.LoadOPANoEntrypoint:
		problem, details = d, e.Problems
		fix = []string{"Name one of the policy's entrypoints (listed above) in entrypoint, or rebuild the policy with -e " + e.Entrypoint + "."}
	case wasm.LoadConfigure:
		problem = "the filter refused its config: " + d
		fix = []string{"Fix the config of the filter block; the filter's README lists its settings."}
	case wasm.LoadStart:
		problem = "the module failed to start: " + d
	default:
		problem = e.Err.Error()
	}
	r := &diag.Report{
		Title:   "WASM Filter Load Failed",
		Source:  e.Source,
		Problem: fmt.Sprintf("filter %q: %s", e.Filter, problem),
		Causes:  causes,
		Fix:     fix,
		Cause:   e,
	}
	if len(details) > 0 {
		r.Details = []diag.Section{{Heading: "What is missing or wrong", Lines: details}}
	}
	return r
}
