package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// greeter is a server with one tool, greet, which asks the client's
// person for a name when the call gives none (elicitation: a
// server-initiated request in 2025-11-25, an input request of a Multi
// Round-Trip Request in 2026-07-28; the handler is written once for both).
func greeter() *mcp.Server {
	s := mcp.NewServer(mcp.Implementation{Name: "greeter", Version: "1.0.0"}, mcp.ServerOptions{})
	s.AddTool(mcp.Tool{
		Name:        "greet",
		Description: "Greet someone.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Name string }
		if err := json.Unmarshal(req.Arguments, &a); err != nil {
			return nil, err
		}
		if a.Name == "" {
			r, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
				Message:         "Whom should I greet?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
			})
			if err != nil {
				return nil, err
			}
			if r.Action != "accept" {
				return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("no one to greet")}, IsError: true}, nil
			}
			a.Name, _ = r.Content["name"].(string)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.TextContent("hello, " + a.Name)}}, nil
	})
	s.AddResource(mcp.Resource{URI: "greeter://motd", Name: "motd", MimeType: "text/plain"},
		func(ctx context.Context, ss *mcp.ServerSession, uri string) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []mcp.ResourceContents{{URI: uri, MimeType: "text/plain", Text: "be kind"}}}, nil
		})
	return s
}

// A server and a client in one process, over a Pipe: the client connects
// (negotiating the protocol's revision), lists the server's tools and
// calls one. A real client's Conn is a transport's (mcp.StdioConn for a
// process's own stdin and stdout); Nexus's host dials its servers' the
// same way.
func Example() {
	ctx := context.Background()
	client, server := mcp.Pipe()
	go greeter().Serve(ctx, server)

	c, err := mcp.Connect(ctx, client, mcp.ClientOptions{Info: mcp.Implementation{Name: "example", Version: "1.0.0"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	fmt.Println("server:", c.ServerInfo().Name)

	tools, err := c.ListTools(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tools {
		fmt.Println("tool:", t.Name, "-", t.Description)
	}
	res, err := c.CallTool(ctx, "greet", map[string]any{"name": "Ada"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].Text)
	// Output:
	// server: greeter
	// tool: greet - Greet someone.
	// hello, Ada
}

// A tool that needs more from the client asks for it (here elicitation),
// and the client's handler answers: the server's request in 2025-11-25,
// an input request the client answers on its retry in 2026-07-28. Either
// way the call returns the result made with the answer.
func ExampleClientOptions_elicitation() {
	ctx := context.Background()
	for _, version := range []string{mcp.Version20251125, mcp.Version20260728} {
		client, server := mcp.Pipe()
		go greeter().Serve(ctx, server)
		c, err := mcp.Connect(ctx, client, mcp.ClientOptions{
			ProtocolVersion: version,
			Elicitation: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				fmt.Println("asked:", p.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}, nil
			},
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := c.CallTool(ctx, "greet", map[string]any{}, nil)
		c.Close()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Content[0].Text)
	}
	// Output:
	// asked: Whom should I greet?
	// hello, Grace
	// asked: Whom should I greet?
	// hello, Grace
}

// A server's resources: the client lists them and reads one by its URI.
func ExampleServer_AddResource() {
	ctx := context.Background()
	client, server := mcp.Pipe()
	go greeter().Serve(ctx, server)
	c, err := mcp.Connect(ctx, client, mcp.ClientOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	rs, err := c.ListResources(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rs {
		fmt.Println(r.URI, r.MimeType)
	}
	res, err := c.ReadResource(ctx, "greeter://motd")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Contents[0].Text)
	// Output:
	// greeter://motd text/plain
	// be kind
}

// tap is a Conn around another that notes the method of every request
// it writes: the whole contract is three methods, one JSON-RPC message
// per frame, so a transport, a recorder or a test double is a small type.
type tap struct {
	mcp.Conn
	mu      sync.Mutex
	methods []string
}

func (t *tap) WriteMessage(ctx context.Context, msg []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) == nil && m.ID != nil && m.Method != "" {
		t.mu.Lock()
		t.methods = append(t.methods, m.Method)
		t.mu.Unlock()
	}
	return t.Conn.WriteMessage(ctx, msg)
}

// A Conn is what the protocol runs over: ReadMessage, WriteMessage and
// Close. Wrapping one sees every frame that passes, as Nexus's host
// does to put its chain around a server.
func ExampleConn() {
	ctx := context.Background()
	client, server := mcp.Pipe()
	go greeter().Serve(ctx, server)
	t := &tap{Conn: client}
	c, err := mcp.Connect(ctx, t, mcp.ClientOptions{ProtocolVersion: mcp.Version20251125})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if _, err := c.CallTool(ctx, "greet", map[string]any{"name": "Lin"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	t.mu.Lock()
	fmt.Println(strings.Join(t.methods, ", "))
	t.mu.Unlock()
	// Output:
	// initialize, tools/call
}
