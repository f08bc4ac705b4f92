// Command httprelay is the floor of an HTTP MCP proxy for the gateway
// benchmarks: a process of its own that forwards each request to one
// upstream and streams the answer back, doing nothing else (no
// decoding, no policy, no audit). A gateway that does real work per call
// cannot be faster than this, so what it adds over a direct call is the
// least any proxy hop costs on the machine, measured in the same run as
// the gateways it bounds (BenchmarkToolHive).
//
// Usage: httprelay --listen ADDR UPSTREAM_URL
package main
