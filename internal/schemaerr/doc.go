// Package schemaerr turns a JSON Schema validation error into lines a
// person can act on: one per innermost cause, "JSON pointer: rule broken",
// sorted and without repeats. Tool arguments and plugin configs are
// reported the same way.
package schemaerr
