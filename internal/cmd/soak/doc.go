//go:build unix

// Command soak runs `nexus serve` replicas sharing a Redis under load for a
// while, breaks things on the way, and reports what each agent saw and what
// the gateway kept: the figures `make soak` writes into README.md.
//
// Three agents share the replicas: alice floods (many workers, slow calls,
// disconnects), bob and carol call at an ordinary pace. Every session opens,
// makes a few calls and ends; a request goes to the next replica in turn, so
// sessions move between replicas through the store. Faults, spread over the
// run: the upstream server killed (SIGKILL) under a replica, Redis killed and
// started again, a replica killed and started again.
//
// The run fails (exit 1) when:
//   - the audit logs hold fewer tools/call records than calls the clients
//     saw answered, or an answered echo has no record or more than one
//     (each echo carries a marker of its own in its arguments);
//   - bob or carol got a 503 or 429 that names a limit (alice's flood must
//     not lock them out);
//   - a replica's goroutines at the end are far above where they started,
//     beyond what its sessions still live account for.
package main
