//go:build unix

package httptransport

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peekable: alive can look at an idle connection.
const peekable = true

// alive reports whether an idle connection can carry another request: the
// server has not closed it, and has sent nothing on it (which would be out
// of step). It peeks without waiting, one system call.
func alive(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false // cannot look: not safe to reuse
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var buf [1]byte
	idle := false
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := unix.Recvfrom(int(fd), buf[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		idle = rerr == unix.EAGAIN || rerr == unix.EWOULDBLOCK
		return true
	})
	return err == nil && idle
}
