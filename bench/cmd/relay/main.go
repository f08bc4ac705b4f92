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

// start starts argv with pipes to its stdin and from its stdout.
func start(argv []string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	cmd := exec.Command(argv[0], argv[1:]...)
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
		fmt.Fprintln(os.Stderr, "relay:", err)
		os.Exit(1)
	}
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
