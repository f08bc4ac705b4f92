// Package audit keeps Nexus's audit log: one JSON line per decision point
// (a tool call, a tool withheld from a listing, a resource read, a prompt,
// a server's sampling or elicitation request), each linked to the line
// before it, so that an edited, deleted or reordered record breaks the
// chain where it happened:
//
//	{"time":"2026-11-24T20:51:14.1Z","agent":"claude","server":"github","method":"tools/call","tool":"delete_repo",
//	 "decision":"deny","link":"no-destructive","source":"nexus.hcl:12","reason":"...","steps":[...],
//	 "args_hmac":"9f2c...","args_bytes":18,"seq":42,"mac":"c0ffee..."}
//
// With a key (Options.Keys.MAC) the link is "mac", HMAC-SHA256 of the line
// before: nobody without the key can recompute the chain after editing,
// deleting or renumbering a record, and argument digests (args_hmac) cannot
// be confirmed by guessing. Without one it is "prev", plain sha256, which
// shows accidental damage only; Open warns so.
//
// What no later link can show (the last records edited, the tail cut) a
// signed Checkpoint shows: with a signing key (ed25519), the Writer signs
// the chain's head (seq, link of the last line, the file's genesis and
// size) into a second file every CheckpointEvery records, before each
// rotation and at Close, as a transparency log signs its tree heads.
// VerifyWith checks the chain, and each checkpoint against the record it
// names; records after the newest checkpoint are reported as not yet
// covered. The checkpoint file should live where the log's writers cannot
// rewrite it (a cut of both files back to an older checkpoint is not
// detectable from them alone).
//
// The first record of each file carries a random genesis (and the key's
// KeyID); the first of the log links to the genesis, the first of a later
// file (after a size-based rotation: path.1 is the newest rotated file) to
// the last record of the file before.
//
// A Writer holds an exclusive lock on path.lock (flock, LockFileEx) with
// its process id in it: a second writer, in this process or another, is
// refused and told who holds the log. It queues records and writes them
// from a goroutine of its own, so a slow disk delays no call beyond the
// bounded queue. A record too big for a line is shrunk (its arguments
// become a preview, flagged), never dropped. With FailClosed, Reserve
// holds the queue place of a call's record before the call runs and
// refuses while the queue is full or the sink fails; otherwise records
// are dropped, counted (Dropped) and reported. A disk that fails after a
// record was queued loses that record, and with FailClosed every call
// after it is refused.
//
// A refused or failed call's record carries its report (Record.Report,
// set by SetReport): the structure the command line prints and the
// gateway's client reads in brief, as diag.JSON, masked as the command
// line masks it, and cut to MaxReport (flagged "report_truncated").
//
// A Feed hands the same records to watchers in the process (the web
// console's live stream) while any subscribes: each subscriber has a
// bounded buffer, and one that falls behind loses records, counted,
// rather than slowing a call.
//
// The audit block (Block) is this package's: its options are ConfigBlock's
// table, through which the config loader decodes the block from nexus.hcl
// and JSON and writes it back, keys written into the file masked.
package audit
