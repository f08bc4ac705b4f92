// Package regoguard is a Nexus policy written in Rego (policy.rego),
// compiled to WebAssembly by OPA and run by the host like any WASM filter:
// destructive tools only for admins, blocked servers hidden and refused,
// credentials in arguments refused, page sizes capped. It holds no Go
// code: its tests build the policy with the OPA compiler and run
// testdata/cases.json and the README's config block through the host's
// runtime.
package regoguard
