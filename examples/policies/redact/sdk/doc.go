// Command sdk is redact written with the Go SDK (sdk/filter), built to
// WebAssembly: a sanitizer that edits one field of structuredContent.
package main
