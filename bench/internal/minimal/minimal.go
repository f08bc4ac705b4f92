package minimal

import (
	"bytes"
	"io"
	"net/http"
)

// Answer appends to out the response to frame, one JSON-RPC request, and
// reports false for a notification, which gets none. It answers
// initialize (with the protocol version the client asked for), tools/list
// (the echo tool of bench/internal/echo), and every other request as a
// tools/call of echo.
func Answer(out, frame []byte) ([]byte, bool) {
	id, ok := member(frame, `"id":`)
	if !ok {
		return out, false
	}
	out = append(append(out, `{"jsonrpc":"2.0","id":`...), id...)
	switch {
	case IsInitialize(frame):
		version, ok := member(frame, `"protocolVersion":`)
		if !ok {
			version = []byte(`"2025-11-25"`)
		}
		out = append(append(append(out, `,"result":{"protocolVersion":`...), version...),
			`,"capabilities":{"tools":{}},"serverInfo":{"name":"minimalecho","version":"1"}}}`...)
	case bytes.Contains(frame, []byte(`"method":"tools/list"`)):
		out = append(out, `,"result":{"tools":[{"name":"echo","description":"Echo back a message","inputSchema":{"type":"object","properties":{"message":{"type":"string"}},"required":["message"]}}]}}`...)
	default:
		msg, ok := member(frame, `"message":`)
		if !ok {
			msg = []byte(`""`)
		}
		out = append(append(append(out, `,"result":{"content":[{"type":"text","text":`...), msg...), "}]}}"...)
	}
	return out, true
}

// IsInitialize reports whether frame is an initialize request.
func IsInitialize(frame []byte) bool {
	return bytes.Contains(frame, []byte(`"method":"initialize"`))
}

// Handler serves Answer as streamable HTTP at any path: a POST's answer is
// its JSON body, a notification gets 202, initialize hands out a session
// id, and GET and DELETE get 405 (no stream of server messages, no
// session to end), as the transport allows.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out, ok := Answer(nil, body)
		if !ok {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		h := w.Header()
		h["Content-Type"] = jsonType
		if IsInitialize(body) {
			h["Mcp-Session-Id"] = session
		}
		_, _ = w.Write(out)
	})
}

var (
	jsonType = []string{"application/json"}
	session  = []string{"minimal"}
)

// member returns the value after key in frame: a number, or a string with
// its quotes (escapes kept). It is enough for the frames the benchmark
// clients send, not a JSON parser.
func member(frame []byte, key string) ([]byte, bool) {
	i := bytes.Index(frame, []byte(key))
	if i < 0 {
		return nil, false
	}
	v := frame[i+len(key):]
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
