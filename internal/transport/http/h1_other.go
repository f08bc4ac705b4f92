//go:build !unix

package httptransport

import "net"

// peekable is false: alive cannot look at an idle connection here, so a
// connection the server closed would take the next POST with it; h1
// leaves every request to net/http, whose reader sees the close.
const peekable = false

func alive(net.Conn) bool { return false }
