// Package policy is the chain every call passes through: policies decide
// whether a request may go out (allow, deny, or modify its params), and
// sanitizers decide what of a response may come back. Built-in checks, WASM
// filters and plugin filters are all Links in one ordered Chain, so the
// host can say exactly which link decided.
//
// Links fail closed: a policy that errors denies, a sanitizer that errors
// withholds the result, unless the filter's on_error says otherwise.
package policy
