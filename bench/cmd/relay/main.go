package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		os.Stderr.WriteString("usage: relay COMMAND [ARG...]\n")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	up, err := cmd.StdinPipe()
	if err != nil {
		panic(err)
	}
	down, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	if err := cmd.Start(); err != nil {
		os.Stderr.WriteString("relay: " + err.Error() + "\n")
		os.Exit(1)
	}
	go func() {
		lines(os.Stdin, up)
		up.Close() // EOF on stdin ends the child
	}()
	lines(down, os.Stdout)
	_ = cmd.Wait()
}

// lines copies r to w a line (or a buffer's worth of one) at a time.
func lines(r io.Reader, w io.Writer) {
	in := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
