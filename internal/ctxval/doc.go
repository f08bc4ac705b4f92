// Package ctxval attaches values to contexts on the hot path of a call
// without costing the contexts derived from them a goroutine each (see
// With). It imports no other Nexus package.
package ctxval
