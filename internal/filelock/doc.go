// Package filelock takes exclusive advisory locks on files shared by
// Nexus processes (the audit log, the trust store), and records in a lock
// file which process holds it, so that one refused or kept waiting can
// say who by. It is a leaf: it imports no other Nexus package.
package filelock
