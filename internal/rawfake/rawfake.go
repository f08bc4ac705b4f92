package rawfake

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// Server is the mcp.Handler; Pipe serves it.
type Server struct{}

func (Server) HandleNotification(context.Context, string, json.RawMessage) {}

func (Server) HandleRequest(_ context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case mcp.MethodInitialize:
		return json.RawMessage(`{"protocolVersion":"` + mcp.Version20251125 + `","capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"rawfake","version":"1"}}`), nil
	case mcp.MethodResourcesList:
		return json.RawMessage(`{"resources":[]}`), nil
	case mcp.MethodResourcesTemplatesList:
		return json.RawMessage(`{"resourceTemplates":[{"uriTemplate":"raw:{result}","name":"raw"}]}`), nil
	case mcp.MethodResourcesRead:
		var p struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(params, &p)
		raw, ok := strings.CutPrefix(p.URI, "raw:")
		if !ok {
			return nil, mcp.InvalidParams("rawfake: read raw:<the result's JSON, query-escaped>")
		}
		result, err := url.QueryUnescape(raw)
		if err != nil {
			return nil, mcp.InvalidParams("rawfake: %v", err)
		}
		return json.RawMessage(result), nil
	case mcp.MethodToolsList:
		return json.RawMessage(`{"tools":[{"name":"reply","inputSchema":{"type":"object","properties":{"result":{"type":"string"}},"required":["result"]}}]}`), nil
	case mcp.MethodPing:
		return json.RawMessage(`{}`), nil
	case mcp.MethodToolsCall:
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Result string `json:"result"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Name != "reply" {
			return nil, mcp.InvalidParams("rawfake: call the tool \"reply\" with {\"result\": \"<JSON>\"}")
		}
		return json.RawMessage(p.Arguments.Result), nil
	}
	return nil, mcp.MethodNotFound(method)
}

// Pipe starts the server on one end of an in-memory pipe and returns the
// other end for a client. The server stops when the client closes its end
// or ctx ends.
func Pipe(ctx context.Context) mcp.Conn {
	client, server := mcp.Pipe()
	p := mcp.NewPeer(server, mcp.PeerOptions{Handler: Server{}})
	p.Start()
	go func() {
		select {
		case <-p.Done():
		case <-ctx.Done():
			p.Close()
		}
	}()
	return client
}
