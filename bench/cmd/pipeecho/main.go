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
