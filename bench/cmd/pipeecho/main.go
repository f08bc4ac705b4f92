// Command pipeecho copies each line of stdin to stdout: the raw pipe round
// trip that MCP-over-stdio calls are measured against.
package main

import (
	"bufio"
	"os"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return
		}
		if _, err := os.Stdout.Write(line); err != nil {
			return
		}
	}
}
