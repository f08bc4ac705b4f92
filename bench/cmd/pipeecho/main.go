// Command pipeecho copies each line of stdin to stdout: the raw pipe round
// trip that MCP-over-stdio calls are measured against. A line longer than
// its buffer is copied in pieces.
package main

import (
	"bufio"
	"os"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
		if _, err := os.Stdout.Write(line); err != nil {
			return
		}
	}
}
