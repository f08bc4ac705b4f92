// Command policy-ratelimit is a Nexus policy plugin: token-bucket rate
// limits per agent, per server and per tool, from the filter's config. A
// call over a limit is denied with the time until the next call would be
// allowed.
//
// It is a plugin rather than a WASM filter because it keeps state (the
// buckets) across calls for as long as the host runs: in the plugin's
// process by default, or, with a Redis store, in Redis, so that gateway
// replicas sharing it enforce one limit together. There one Lua script
// per call checks all of the call's buckets and takes from all or none,
// on the Redis server's clock; when Redis fails, the filter's
// on_store_error says whether calls are denied or counted in the process.
package main
