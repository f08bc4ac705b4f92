package main

import (
	"bufio"
	"os"

	"github.com/nexus-mcp/nexus/bench/internal/minimal"
)

func main() {
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
