// Package option is how a component owns its configuration: a Table of
// options, each with its name in a nexus.hcl block and on a JSON server
// entry, one Decode for both formats, and one Out for writing it back.
//
// A transport keeps its table beside its code (internal/transport/http's
// OptionTable, internal/transport/stdio's), so adding an option touches that
// transport and its tests: the config loader builds its HCL schema, its
// JSON keys, its decoding, `nexus config compile` and the "only applies
// to" warnings from the table, and the host hands the decoded Options to the
// transport unchanged.
//
// A component that owns a top-level block of the config (internal/lock's
// lock block, internal/telemetry's telemetry block) keeps its table the
// same way: the loader decodes the block from nexus.hcl and from the JSON
// formats' member of the same name through it, and writes it back through
// Out. CheckURL and Loopback are the checks such tables share.
//
// A row may be a block of its own inside its block (Nest, NestList: a
// filter's match and limits) or the label that names its block; a format
// reads either through Body, so a nested row is checked, reported and
// written back as a top-level one is (block.go).
//
// A value's elements and members can be kept with where each was written
// (Value.ItemSites, MemberSites: a Site is a position and its lines), for
// checks made after the config's layers merge, such as the gateway's
// required_servers naming a server no layer configures.
//
// Decoding goes through Value, which each config format implements over
// its own helpers: an option reads its value once, and the messages and
// positions of a wrong value are still the format's (file:line and caret in
// nexus.hcl, a byte offset and JSON pointer in JSON). Writing goes through
// Writer, which keeps a value that came from the environment or an input as
// its template, never the secret.
package option
