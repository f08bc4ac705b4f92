// Command minimalecho is a minimal MCP echo server over stdio, written
// without any MCP or JSON library: it answers initialize and tools/list
// (the echo tool of bench/internal/echo), ignores notifications, and
// answers every other request with a tools/call result whose text is the
// request's "message" argument, copied as it came (a JSON string stays a
// JSON string). It does the least work a server can do, so a client
// round trip against it measures the client; the raw pipe benchmarks
// compare against it.
package main

import (
	"bufio"
	"bytes"
	"os"
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
		id, ok := member(line, `"id":`)
		if !ok {
			continue // a notification
		}
		out = append(append(out[:0], `{"jsonrpc":"2.0","id":`...), id...)
		if bytes.Contains(line, []byte(`"method":"initialize"`)) {
			out = append(out, `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"minimalecho","version":"1"}}}`+"\n"...)
		} else if bytes.Contains(line, []byte(`"method":"tools/list"`)) {
			out = append(out, `,"result":{"tools":[{"name":"echo","description":"Echo back a message","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}}`+"\n"...)
		} else {
			msg, ok := member(line, `"message":`)
			if !ok {
				msg = []byte(`""`)
			}
			out = append(append(append(out, `,"result":{"content":[{"type":"text","text":`...), msg...), "}]}}\n"...)
		}
		if _, err := os.Stdout.Write(out); err != nil {
			return
		}
	}
}

// member returns the value after key in line: a number, or a string with
// its quotes (escapes kept). It is enough for the frames the benchmark
// clients send, not a JSON parser.
func member(line []byte, key string) ([]byte, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return nil, false
	}
	v := line[i+len(key):]
	if len(v) > 0 && v[0] == '"' {
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case '\\':
				j++
			case '"':
				return v[:j+1], true
			}
		}
		return nil, false
	}
	j := 0
	for j < len(v) && (v[j] == '-' || v[j] >= '0' && v[j] <= '9') {
		j++
	}
	return v[:j], j > 0
}
