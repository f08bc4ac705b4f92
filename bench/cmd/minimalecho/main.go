package main

import (
	"bufio"
	"os"

	"github.com/nexus-mcp/nexus/bench/internal/listen"
	"github.com/nexus-mcp/nexus/bench/internal/minimal"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "--listen" {
		// A server in a process of its own, as every server a client
		// calls over HTTP is.
		listen.Serve("minimalecho", os.Args[2], minimal.Handler())
	}
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	var out []byte
	for {
		line, err := in.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A line longer than the buffer (a large payload).
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil {
			return
		}
		var ok bool
		if out, ok = minimal.Answer(out[:0], line); !ok {
			continue // a notification
		}
		if _, err := os.Stdout.Write(append(out, '\n')); err != nil {
			return
		}
	}
}
