package host

import (
	"github.com/nexus-mcp/nexus/internal/gateway"
)

// Gateway serves a host to MCP clients, as `nexus serve` does: one catalog
// of every server the client's agent may see, each request through the
// chain, server-initiated requests back to the session that caused them.
// Serve runs one session over any mcp.Conn (mcp.StdioConn() for stdio);
// HTTP makes the streamable HTTP handler (with the legacy HTTP+SSE
// endpoints, /healthz and /readyz). Safe for concurrent use; Close ends
// every session.
type Gateway = gateway.Gateway

// GatewayOptions tune a Gateway (page size, instructions, the timeout of
// requests sent to clients, requests per session). The zero value is
// usable.
type GatewayOptions = gateway.Options

// GatewayHTTPOptions configure Gateway.HTTP: the agent every request acts
// as (or none, and each request's token names it), allowed browser
// origins, the servers /readyz requires, limits, an OAuth verifier.
type GatewayHTTPOptions = gateway.HTTPOptions

// NewGateway makes a gateway in front of h. Its sessions connect upstream
// through hosts h.NewSession makes (one per agent that its sessions
// share, and one per session whose client answers server requests), so
// a server's notifications reach only the agent they concern.
func NewGateway(h *Host, o GatewayOptions) *Gateway {
	if o.Version == "" {
		o.Version = Version
	}
	return gateway.New(h.e, o)
}
