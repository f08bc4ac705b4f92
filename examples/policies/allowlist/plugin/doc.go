// Command plugin is allowlist written as a go-plugin policy (sdk/plugin).
package main
