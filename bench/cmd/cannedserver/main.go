// Command cannedserver answers every request with a fixed tools/call result
// (echoing the id) and does no other work: against it a client round trip
// measures the client alone.
package main

import (
	"bufio"
	"bytes"
	"os"
)

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := in.ReadSlice('\n')
		if err != nil {
			return
		}
		i := bytes.Index(line, []byte(`"id":`))
		if i < 0 {
			continue
		}
		j := i + 5
		for j < len(line) && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		id := line[i+5 : j]
		var out []byte
		if bytes.Contains(line, []byte(`"initialize"`)) {
			out = append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"c","version":"1"}}}`+"\n"...)
		} else {
			out = append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":{"content":[{"type":"text","text":"hello"}]}}`+"\n"...)
		}
		os.Stdout.Write(out)
	}
}
