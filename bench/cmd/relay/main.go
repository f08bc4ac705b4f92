package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/nexus-mcp/nexus/bench/internal/listen"
)

func main() {
	if len(os.Args) < 2 {
		os.Stderr.WriteString("usage: relay [--listen ADDR] COMMAND [ARG...]\n")
		os.Exit(2)
	}
	if os.Args[1] == "--listen" && len(os.Args) > 3 {
		serveHTTP(os.Args[2], os.Args[3:])
		return
	}
	cmd, up, down := start(os.Args[1:])
	go func() {
		lines(os.Stdin, up)
		up.Close() // EOF on stdin ends the child
	}()
	lines(down, os.Stdout)
	_ = cmd.Wait()
}

// start starts argv with pipes to its stdin and from its stdout, in
// blocking mode: a goroutine reading one then waits in read(2) on its own
// thread and the kernel wakes it directly, with no trip through Go's
// network poller. That is the fastest a Go process passes a line on
// (measured: 40-48 µs a hop call by call against 52-53 through os/exec's
// pipes), and a floor must not be a slow relay.
func start(argv []string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	pipe := func() (r, w *os.File) {
		var fd [2]int
		syscall.ForkLock.RLock()
		err := syscall.Pipe(fd[:])
		if err == nil {
			syscall.CloseOnExec(fd[0])
			syscall.CloseOnExec(fd[1])
		}
		syscall.ForkLock.RUnlock()
		if err != nil {
			panic(err)
		}
		return os.NewFile(uintptr(fd[0]), "|0"), os.NewFile(uintptr(fd[1]), "|1")
	}
	childIn, up := pipe()
	down, childOut := pipe()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = childIn, childOut, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
	childIn.Close()
	childOut.Close()
	return cmd, up, down
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

// serveHTTP relays each POST's body to the command as a line and answers
// with the command's next response line (lines without a result or an
// error, the command's notifications, are skipped): the least a bridge
// from streamable HTTP to a stdio server can do. A message without an id
// is a notification and gets 202; GET and DELETE get 405 (no stream, no
// session), as the transport allows. One message at a time.
func serveHTTP(addr string, argv []string) {
	_, up, down := start(argv)
	in := bufio.NewReaderSize(down, 64<<10)
	var mu sync.Mutex
	listen.Serve("relay", addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := up.Write(append(bytes.TrimSpace(body), '\n')); err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		if !bytes.Contains(body, []byte(`"id"`)) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			if bytes.Contains(line, []byte(`"result"`)) || bytes.Contains(line, []byte(`"error"`)) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(line)
				return
			}
		}
	}))
}
