// Package lock is the tool lockfile, nexus.lock.hcl: the definitions of
// every configured server's tools, prompts and resource templates as they
// were approved, kept in version control so that a change to one (a rug
// pull, a poisoned description) shows in review and can be refused.
//
// Each item is pinned by the sha256 of the canonical JSON (RFC 8785) of its
// definition (a tool's title, description, input and output schemas and
// annotations), with its description beside it so a diff reads as one.
// Servers and items are written in name order. nexus lock writes the file,
// nexus lock --check compares the servers with it (Diff).
//
// The file is shared by every replica beside it: written whole and
// renamed into place (WriteFile), changed under a file lock (Update: the
// console's accept), and followed by each nexus serve (Watch), which
// enforces a change without a restart.
//
// What to do with a tool the file does not pin as it is (Policy) is the
// config's lock block, whose options this package keeps (ConfigBlock): the
// config loader decodes the block through the table.
package lock
