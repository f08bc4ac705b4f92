// Package block is the config's plugin block: a go-plugin binary a
// transport or filter names, its path and pinned SHA-256, as an option
// table (issue 39). It sits under internal/plugin, which runs the
// binaries, but apart from it: internal/plugin imports internal/config
// (the servers and filters it starts), and config imports this package to
// decode the block, so the block's table cannot live in internal/plugin
// without a cycle. It imports no other part of the host.
package block
