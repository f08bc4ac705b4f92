// Package plugintest helps tests run real plugin binaries through the host:
// it builds a plugin's main package into a temporary directory, pins its
// checksum in a plugin block and opens it with a Manager that is closed
// when the test ends.
package plugintest
