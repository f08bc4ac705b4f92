package httptransport

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// The stateless revision (2026-07-28) on the wire. A request whose
// params._meta names a protocol version is modern: its POST carries
// MCP-Protocol-Version (the version in _meta), Mcp-Method, Mcp-Name (the
// tool or prompt name, the resource URI) and the Mcp-Param headers the
// client put in the request's context (mcp.WithParamHeaders), never a
// session id; the headers are read from the body being sent, so they
// cannot disagree with it. A 4xx answer whose body is a JSON-RPC error is
// that request's answer (a modern server's UnsupportedProtocolVersion,
// HeaderMismatch or MissingRequiredCapability, which the client's era
// selection reads; a legacy server's refusal, which tells it to fall
// back). A modern response stream is never resumed: when it breaks before
// the response, the request is lost, and the error answer says so
// ("reissue": true) for the client to send it again as a new request
// where that is safe. notifications/cancelled is not posted to a modern
// server: closing the request's stream is the cancellation.

// modernReq is what a modern request's headers mirror.
type modernReq struct {
	version, method, name string
	params                []mcp.ParamHeader
}

// modernOf reads a request's modern fields, or nil for a legacy request.
func modernOf(ctx context.Context, m *mcp.Message) *modernReq {
	if !m.IsRequest() || !bytes.Contains(m.Params, []byte(mcp.MetaProtocolVersion)) {
		return nil
	}
	var p struct {
		Name   string `json:"name"`
		URI    string `json:"uri"`
		TaskID string `json:"taskId"`
		Meta   struct {
			Version string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.Meta.Version == "" {
		return nil
	}
	r := &modernReq{version: p.Meta.Version, method: m.Method, params: mcp.ParamHeadersOf(ctx)}
	switch m.Method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		r.name = p.Name
	case mcp.MethodResourcesRead:
		r.name = p.URI
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		r.name = p.TaskID // the tasks extension's routing header
	}
	return r
}

// setHeaders writes r's headers.
func (r *modernReq) setHeaders(h http.Header) {
	h["Mcp-Protocol-Version"] = []string{mcp.EncodeHeaderValue(r.version)}
	h["Mcp-Method"] = []string{mcp.EncodeHeaderValue(r.method)}
	if r.name != "" {
		h["Mcp-Name"] = []string{mcp.EncodeHeaderValue(r.name)}
	}
	for _, p := range r.params {
		h["Mcp-Param-"+p.Name] = []string{p.Value}
	}
}

// noteModern records that the Conn has sent a modern request.
func (c *Conn) noteModern() {
	c.mu.Lock()
	c.modern = true
	c.mu.Unlock()
}

// RPCReplyError is an HTTP error status whose body was a JSON-RPC error
// answering a modern request: the request's answer, delivered as such.
type RPCReplyError struct {
	Status int
	Err    *mcp.RPCError
}

func (e *RPCReplyError) Error() string { return e.Err.Error() }
func (e *RPCReplyError) Unwrap() error { return e.Err }

// maxErrorBody bounds the body of an error status read for a JSON-RPC
// error.
const maxErrorBody = 64 << 10

// modernStatusErr reads a modern request's error status: the JSON-RPC
// error its body holds, else the *HTTPStatusError statusErr makes.
func (c *Conn) modernStatusErr(x *exchange, resp *http.Response) error {
	stop := time.AfterFunc(c.cfg.Timeout, func() { resp.Body.Close() })
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	stop.Stop()
	resp.Body.Close()
	if isMedia(resp.Header.Get("Content-Type"), "application/json") {
		var m struct {
			Error *mcp.RPCError `json:"error"`
		}
		if json.Unmarshal(body, &m) == nil && m.Error != nil {
			return &RPCReplyError{Status: resp.StatusCode, Err: m.Error}
		}
	}
	return &HTTPStatusError{Server: c.cfg.Server, Method: x.method, URL: c.target(x), Status: resp.StatusCode,
		BodyExcerpt: c.scrub(excerpt(bytes.NewReader(body))), Header: resp.Header}
}
