// Package filterabi is the WASM filter ABI, version 1, as Go code: the
// names and numbers of ABI.md (sdk/filter/ABI.md is the full text) that the
// host checks a module against, the event fields the host function "field"
// answers and what it answers for each (FieldOf, ContentTextOf), and the
// log levels of the host function "log".
//
// Both sides use it: internal/wasm, the host, and sdk/filter, the Go guest
// SDK and its native harness, so the two cannot disagree. A guest author
// in Go never needs it (sdk/filter hides the ABI); one writing in another
// language reads ABI.md.
package filterabi
