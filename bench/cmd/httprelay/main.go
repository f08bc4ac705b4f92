package main

import (
	"io"
	"net/http"
	"os"
	"time"

	"github.com/nexus-mcp/nexus/bench/internal/listen"
)

// hop are the headers of a streamable HTTP exchange that a relay passes
// on both ways; the rest (connection management) belong to each hop.
var hop = []string{"Content-Type", "Accept", "Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id", "Authorization", "Traceparent", "Cache-Control"}

func main() {
	if len(os.Args) != 4 || os.Args[1] != "--listen" {
		os.Stderr.WriteString("usage: httprelay --listen ADDR UPSTREAM_URL\n")
		os.Exit(2)
	}
	upstream := os.Args[3]
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}
	listen.Serve("httprelay", os.Args[2], http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := http.NewRequestWithContext(r.Context(), r.Method, upstream, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.ContentLength = r.ContentLength
		copyHeaders(req.Header, r.Header)
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		// An SSE answer is passed on event by event; a JSON one in one write.
		f, _ := w.(http.Flusher)
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				if f != nil {
					f.Flush()
				}
			}
			if err == io.EOF {
				return
			}
			if err != nil {
				return
			}
		}
	}))
}

func copyHeaders(dst, src http.Header) {
	for _, k := range hop {
		if v := src.Values(k); len(v) > 0 {
			dst[k] = v
		}
	}
}
