// Package filelock takes exclusive advisory locks on files shared by
// Nexus processes (the audit log, the trust store), and records in a lock
// file which process holds it, so that one refused or kept waiting can
// say who by. Hold is the same lock for a short change to a file that
// people keep (the lockfile in a repository), and removes its lock file
// on release, safely for those waiting on it. It is a leaf: it imports no
// other Nexus package.
package filelock
