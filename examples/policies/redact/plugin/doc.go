// Command plugin is redact written as a go-plugin sanitizer (sdk/plugin).
package main
