package mcp

import (
	"encoding/json"
	"fmt"
	"time"
)

// The errors of the JSON-RPC layer: what the other side answered
// (RPCError and the codes MCP uses), a call that ran out of time
// (TimeoutError) and a message that is not JSON-RPC (InvalidMessageError).
// Each says what happened in words a log reader can act on.

// JSON-RPC error codes used by MCP.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeBusy is returned when the bounded queue of incoming requests is full.
	CodeBusy = -32000
	// CodeURLElicitationRequired is the 2025-11-25 error a server returns when a
	// request needs a URL-mode elicitation first.
	CodeURLElicitationRequired = -32042
)

// RPCError is a JSON-RPC error object, as received from or sent to the peer.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if len(e.Data) > 0 && len(e.Data) < 512 {
		return fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (code %d)", e.Message, e.Code)
}

// MethodNotFound builds the error for a method this side does not serve.
func MethodNotFound(method string) *RPCError {
	return &RPCError{Code: CodeMethodNotFound, Message: "method not found: " + method}
}

// InvalidParams builds an invalid-params error.
func InvalidParams(format string, args ...any) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// TimeoutError is returned when a request got no answer in time. The peer
// has already sent notifications/cancelled for it.
type TimeoutError struct {
	Method string
	After  time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no response within %s (request cancelled)", e.Method, e.After)
}

// Timeout lets callers treat it like net.Error timeouts.
func (e *TimeoutError) Timeout() bool { return true }

// InvalidMessageError reports a frame that is not valid JSON-RPC. The peer
// ends the session on it: the stream can no longer be trusted.
type InvalidMessageError struct {
	Frame  []byte // at most 4 KiB of the offending frame
	Offset int64  // byte offset of the syntax error in Frame, -1 if unknown
	Err    error
}

func (e *InvalidMessageError) Error() string {
	return fmt.Sprintf("invalid JSON-RPC message from the other side: %v", e.Err)
}

func (e *InvalidMessageError) Unwrap() error { return e.Err }
