package plugin

import "github.com/nexus-mcp/nexus/internal/wire"

// requestID scans the top level of a JSON-RPC message for its "id" and
// whether it has a "method", without decoding it: the transport tracks the
// requests in flight so that a crash can answer each of them at once.
//
// It never panics and never allocates; on input that is not a JSON object
// it reports no id, and on an object that goes wrong part way what it
// found before.
func requestID(b []byte) (id []byte, hasMethod bool) {
	_ = wire.Members(b, func(key, val []byte) error {
		switch {
		case wire.KeyIs(key, "id"):
			id = val
		case wire.KeyIs(key, "method"):
			hasMethod = true
		}
		return nil
	})
	return id, hasMethod
}
