// Command postecho serves, at the address given as its argument, a plain
// net/http handler that reads a POST's body and answers with a canned
// tools/call result: the raw HTTP round trip to another process that the
// HTTP gateway benchmarks measure `nexus serve --listen` against (a server
// in the benchmark's own process would be cheaper to reach than any
// gateway can be).
package main
