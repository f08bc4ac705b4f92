package main

import (
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/nexus-mcp/nexus/bench/internal/listen"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: postecho ADDR")
		os.Exit(2)
	}
	reply := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}`)
	listen.Serve("postecho", os.Args[1], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	}))
}
