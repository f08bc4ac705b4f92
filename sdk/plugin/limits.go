package plugin

import pb "github.com/nexus-mcp/nexus/internal/pluginwire"

// MaxFrameSize bounds one JSON-RPC message a transport's Conn sends or
// receives (10 MiB, the host's limit for every transport); a larger frame
// is an error on both sides.
const MaxFrameSize = pb.MaxFrameSize
