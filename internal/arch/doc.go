// Package arch holds the tests that pin the shape of the house
// (ARCHITECTURE.md): the floors every package stands on, which imports go
// only down (and that the document's map is the tree's), the dependency
// rules between packages (each stated in the document in the words the
// test fails with; a package's tests are held to both, but that they may
// use the test kits and the few climbs the document states with their
// reasons, and an extension's tests import only the public surface), the
// public surface (what another module may import: host, host/mcp and
// sdk/*; the implementation lives under internal/), that the extensions,
// copied into a module of their own, build there, that public Examples
// import nothing internal, that the facade names every type it speaks
// and returns its own errors, and that each package's comment is in its
// doc.go. An arrow that must never exist fails the tests instead of
// waiting for a review to notice it.
package arch
