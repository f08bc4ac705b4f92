// Package policy is the chain every call passes through: policies decide
// whether a request may go out (allow, deny, or modify its params), and
// sanitizers decide what of a response may come back. Built-in checks, WASM
// filters and plugin filters are all Links in one ordered Chain, so the
// host can say exactly which link decided.
//
// Links fail closed: a policy that errors denies, a sanitizer that errors
// withholds the result, unless the filter's on_error says otherwise.
//
// The package also owns the config's filter, rule and agent blocks
// (block.go): their types and option tables, with the checks across
// options (a filter runs one module, plugin or rule) and the compiling of
// CEL rules at their line and column. internal/config reads and writes the
// blocks through the tables and never the other way round: policy does
// not import config.
package policy
