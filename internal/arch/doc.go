// Package arch holds the test that pins the dependency rules of
// ARCHITECTURE.md, so an arrow that must never exist fails the build's
// tests instead of waiting for a review to notice it.
package arch
