// Package host is the facade that programs embed: it takes a loaded config,
// connects to the MCP servers it names, and turns every failure into an
// error that says which server, from which config file, what went wrong and
// how to fix it.
//
// This first version connects each server on first use and keeps the
// session; the registry (concurrent start, reconnection, the namespaced
// catalog) and the policy chain come next and keep this surface.
package host
