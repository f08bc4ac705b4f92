// Package pluginnode holds the test of the Node.js plugin beside it
// (plugin.js, see README.md): a policy plugin written without the Go SDK,
// against the public contract sdk/plugin/proto/plugin.proto, that the real
// host launches through go-plugin's handshake and calls. It has no Go code
// of its own.
package pluginnode
