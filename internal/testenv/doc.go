// Package testenv gives tests the real programs they run against: the nexus
// binary built from this checkout, and MCP servers installed from npm. A
// test that needs one gets it or fails with the command that fixes it; it
// never skips, because a skipped integration test hides exactly the bugs it
// exists for.
package testenv
