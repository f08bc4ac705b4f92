// Package filter is the Go SDK for Nexus WASM filters: policies that allow,
// deny or modify requests, and sanitizers that allow, deny or modify what
// comes back. A filter is a main package built with the standard toolchain:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o my-filter.wasm .
//
// It registers its handler, and optionally a typed config, from an init
// function (a WASM instance runs init functions when it starts, and never
// main):
//
//	type Config struct{ Allow []string `json:"allow"` }
//
//	func init() {
//		filter.Config(func(c Config) error { allow = c.Allow; return nil })
//		filter.PolicyView(func(v *filter.View) event.Decision {
//			if slices.Contains(allow, v.Server()+"."+v.Tool()) {
//				return filter.Allow()
//			}
//			return filter.Deny("not allowed")
//		})
//	}
//
//	func main() { filter.Main() }
//
// Policy and Sanitizer hand the handler the whole event, decoded; PolicyView
// and SanitizerView hand it a View whose accessors fetch single fields from
// the host, so a cheap check stays cheap. EditStrings rewrites the strings
// of a result in place, and Scan skips over text quickly.
//
// The SDK hides the ABI (ABI.md beside this file): the exports, the one
// reusable input buffer, the host functions and every pointer. Built
// natively, the same filter runs without a host: Configure and Call drive
// it from tests, and Main serves events on stdin.
package filter
