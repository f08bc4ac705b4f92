package event

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// A decision's reason reaches the client, and through it the model. A
// reason that quotes a server's text (a description, a schema's words)
// delivers the very injection a policy refused, so reasons name what a
// server wrote by Quotable and QuotablePath, and by lengths and hashes.

// Quotable is a server's name for a tool, field or property as a reason
// may quote it: as it is when it is a plain identifier (letters, digits,
// _ and -, at most 64 bytes), else "#" and the first 12 hex digits of its
// sha256.
func Quotable(s string) string {
	if len(s) > 0 && len(s) <= 64 && strings.Trim(s, plainChars) == "" {
		return s
	}
	return "#" + ShortHash(s)
}

// QuotablePath is a dotted path into a definition
// (inputSchema.properties.notes.description), each part through Quotable.
func QuotablePath(p string) string {
	parts := strings.Split(p, ".")
	for i, x := range parts {
		parts[i] = Quotable(x)
	}
	return strings.Join(parts, ".")
}

// ShortHash is the first 12 hex digits of s's sha256: enough to tell two
// texts apart in a reason and to find them in the audit log.
func ShortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

const plainChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
