// Package audit keeps Nexus's audit log: one JSON line per decision point
// (a tool call, a tool withheld from a listing, a resource read, a prompt,
// a server's sampling or elicitation request), each carrying the sha256 of
// the line before it, so that an edited, deleted or reordered record
// breaks the chain where it happened:
//
//	{"time":"2026-11-24T20:51:14.1Z","agent":"claude","server":"github","method":"tools/call","tool":"delete_repo",
//	 "decision":"deny","link":"no-destructive","source":"nexus.hcl:12","reason":"...","steps":[...],
//	 "args_sha256":"9f2c...","seq":42,"prev":"c0ffee..."}
//
// The first record of each file carries a random genesis; the first of
// the log chains to the genesis's hash, the first of a later file (after
// a size-based rotation: path.1 is the newest rotated file) to the last
// record of the file before. Verify checks a chain over files given
// oldest first; `nexus audit verify` is its command. A chain proves
// order and integrity, not authorship: the last record can be edited
// undetected (nothing follows it), and a log rewritten whole from an
// edit onward verifies; ship the log off the machine, or keep the last
// hash elsewhere, against that.
//
// A Writer queues records and writes them from a goroutine of its own, so
// a slow disk delays no call beyond the bounded queue. When the queue is
// full or the disk fails, FailClosed refuses (and the host refuses the
// call); otherwise records are dropped, counted (Dropped) and reported.
package audit
