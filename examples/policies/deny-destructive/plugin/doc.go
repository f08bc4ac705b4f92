// Command plugin is deny-destructive written as a go-plugin policy
// (sdk/plugin): a process of its own, started and checksummed by the host.
package main
