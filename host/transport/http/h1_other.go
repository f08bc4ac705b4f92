//go:build !unix

package httptransport

import "net"

// alive cannot peek here; a connection the server closed fails its next
// exchange instead.
func alive(net.Conn) bool { return true }
