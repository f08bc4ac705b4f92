package listen

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

// Serve serves h at addr for the command name and never returns: a
// failure to listen, or the end of serving, exits with status 1.
func Serve(name, addr string, h http.Handler) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, name, "listening on", ln.Addr())
	err = http.Serve(ln, h)
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}
