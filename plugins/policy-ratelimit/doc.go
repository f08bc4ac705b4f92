// Command policy-ratelimit is a Nexus policy plugin: token-bucket rate
// limits per agent, per server and per tool, from the filter's config. A
// call over a limit is denied with the time until the next call would be
// allowed.
//
// It is a plugin rather than a WASM filter because it keeps state (the
// buckets) across calls for as long as the host runs.
package main
