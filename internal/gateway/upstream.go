package gateway

import (
	"context"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/hostapi"
	"github.com/nexus-mcp/nexus/internal/registry"
)

// Upstream is the host a gateway serves: the chain and the servers behind
// it, as an agent sees them. A *host.Host is one (host.NewGateway hands it
// over); the gateway names only what it uses, so it need not import the
// facade that in turn serves as a gateway.
type Upstream interface {
	// Config is the configuration the host runs.
	Config() *config.Config
	// Agent reports whether agent is configured; Visible whether it may
	// see server at all.
	Agent(agent string) bool
	Visible(agent, server string) bool
	// NewSession makes a host that shares this one's configuration and
	// chain but connects upstream on its own, its server-initiated
	// requests and notifications going where o says.
	NewSession(o hostapi.SessionOptions) Upstream
	// Servers is the state of every configured server.
	Servers() []registry.Status
	// Client is agent's session with server, connected on first use.
	Client(ctx context.Context, agent, server string) (*mcp.Client, error)
	// ExposedName is a server's tool as agents call it.
	ExposedName(server, name string) string

	Tools(ctx context.Context, agent string) ([]hostapi.Tool, error)
	Resources(ctx context.Context, agent string) ([]hostapi.Resource, error)
	Templates(ctx context.Context, agent string) ([]hostapi.Template, error)
	Prompts(ctx context.Context, agent string) ([]hostapi.Prompt, error)

	// CallTool, ReadResourceWith and GetPrompt serve modern agents too:
	// their ctx then says so (hostapi.WithAnswersInput, which documents
	// how an upstream's input_required comes back and a retry goes out).
	// An Upstream that also has GuardInput (host's) lets such a result
	// through once the chain has judged it; without it, one is refused.
	CallTool(ctx context.Context, agent, name string, args any, o *hostapi.CallOptions) (*mcp.CallToolResult, error)
	ReadResourceWith(ctx context.Context, agent, server, uri string, o *hostapi.CallOptions) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, agent, server, name string, args map[string]string) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, agent, server string, p *mcp.CompleteParams) (*mcp.CompleteResult, error)
	Subscribe(ctx context.Context, agent, server, uri string) error
	Unsubscribe(ctx context.Context, agent, server, uri string) error
	SetLogLevel(ctx context.Context, agent string, level mcp.LoggingLevel) error
	RootsChanged(ctx context.Context) error

	// Close ends the host's connections (a session's own, for one made by
	// NewSession).
	Close() error
}
