// Package store is what gateway replicas share so that any replica can
// serve any request of any session, with no sticky routing: the
// downstream session's record (its principal, agent, negotiated protocol,
// the client's initialize params, log level, subscriptions and the
// replica that owns its GET stream), each stream's SSE events for
// Last-Event-ID resumption (bounded in number and bytes, with a TTL),
// messages to a session's owner (server-initiated requests and
// notifications reach the replica holding the stream), and fixed-window
// counters for limits that must hold across replicas.
//
// Two implementations: Memory, the embedded default for one process, and
// Redis (Redis 7 or Valkey, through go-redis), chosen by URL with Open.
// Every value expires, every command honours its context and a per
// command timeout, and every failure names the store (its URL without
// the password) and the likely cause. Both pass the same suite
// (store_test.go), Redis against a real redis-server on loopback.
//
// Shared puts a Store behind httpserver.Shared: the gateway's HTTP
// listener, and the httpserver tests, serve sessions across replicas
// through it (a replica's liveness, messages between replicas, and
// once-only signals are Store operations too).
package store
