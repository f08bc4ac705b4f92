// Package wasm runs WASM filters: policies and sanitizers compiled to
// WebAssembly against the filter ABI (sdk/filter/ABI.md), sandboxed in
// wazero.
//
// A Runtime loads filters and shares a compilation cache on disk
// (~/.cache/nexus/wasm by default). Load reads a module, verifies the
// sha256 pinned in the config before compiling anything, compiles it (from
// the cache when it can), checks the ABI marker and every export and import
// signature, and starts one instance with the filter's config, so that a
// broken filter fails at load with a report that lists what is wrong.
//
// A Filter is a policy.Link. Each call runs in an instance from a pool,
// with the filter's memory limit (enforced by the instance's memory
// allocator, so a refused grow is reported as such) and time limit
// (interrupt.go: a fuel counter put in every loop before compiling yields
// to the host every 4096 iterations, where a call past its deadline is
// ended; modules the rewrite cannot take keep wazero's
// close-on-context-done, five times slower in loops). An instance that traps,
// exits or runs out of time or memory is discarded and replaced; instances
// are also recycled after a number of calls. Guests get no files, network,
// environment or arguments; their stdout, stderr and log calls go to a
// per-call log capped in bytes and lines, tagged with the filter's name.
// Tables live outside linear memory, so every table gets a maximum before
// compiling (tables.go): growth past it fails in the guest, and a module
// that declares or imports a table beyond MaxTableElems is refused.
//
// Rego policies compiled by `opa build -t wasm` (a bundle, or the
// policy.wasm in it) load through the same Load and run in the same
// sandbox and pool (opa.go): the module is recognised by its exports (or
// Spec.ABI = ABIOPA), its imported memory is made its own so memory_mb
// bounds it, the event is its input and the filter's config (over
// Spec.DataFile, over the bundle's data.json) its data, and the value of
// Spec.Entrypoint becomes the decision. The builtins OPA leaves to the
// host are provided where they are pure (OPABuiltins); a policy calling
// an impure one is refused at load, naming it.
//
// Every error names the filter, the event and the cause: load errors are
// *LoadError values (a Kind and the facts internal/explain reports them
// from), call errors are *CallError values; both wrap the Err* sentinels
// for errors.Is. Entry turns
// a filter block of the config into its link of the chain.
package wasm
