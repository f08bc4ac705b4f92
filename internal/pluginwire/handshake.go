package pluginwire

import (
	goplugin "github.com/hashicorp/go-plugin"
)

// The handshake every Nexus plugin and host share. The magic cookie is not a
// security measure: it tells a binary run by hand that it is a plugin, and
// tells the host that a binary is a Nexus plugin rather than some other
// go-plugin program.
const (
	MagicCookieKey   = "NEXUS_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "5e3b7c1d9a0f4e2b8c6d1a7f3e9b2c4d"
)

// ProtocolVersions are the plugin protocol versions this SDK speaks, newest
// first. The host and the plugin agree on the newest version both know,
// as Terraform and its providers do.
var ProtocolVersions = []int{1}

// Handshake is the go-plugin handshake of Nexus plugins. Hosts use it with
// VersionedPlugins, so ProtocolVersion is left zero.
var Handshake = goplugin.HandshakeConfig{
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// SetName is the key of the one go-plugin plugin a Nexus binary serves; the
// kinds it offers are gRPC services on it, listed by Meta.Info.
const SetName = "nexus"

// Kinds a plugin can serve.
const (
	KindTransport = "transport"
	KindPolicy    = "policy"
	KindSanitizer = "sanitizer"
)

// SessionMetadataKey is the gRPC metadata key that names the transport
// session a Stream belongs to.
const SessionMetadataKey = "nexus-session"

// MaxFrameSize bounds one JSON-RPC message in either direction (10 MiB, the
// host's limit for every transport). gRPC messages may be a little larger,
// for the envelope.
const MaxFrameSize = 10 << 20

// MaxGRPCMessage is the gRPC message size limit both sides set: a frame at
// the limit plus room for the protobuf envelope.
const MaxGRPCMessage = MaxFrameSize + 64<<10

// GRPCWindow is the HTTP/2 flow-control window both sides set, per stream
// and per connection. A window set by hand turns off gRPC's bandwidth
// estimator, whose PING and WINDOW_UPDATE frames cost each small Decide
// on the long-lived Decisions stream extra writes and wake-ups; 4 MiB
// keeps a large transport frame from waiting on window updates.
const GRPCWindow = 4 << 20

// ReattachEnv is the environment variable through which the host attaches
// to plugins that are already running (see Debug).
const ReattachEnv = "NEXUS_REATTACH_PLUGINS"

// Reattach describes a running plugin the host should attach to instead of
// launching it. NEXUS_REATTACH_PLUGINS holds a JSON object of these, keyed by
// the plugin block's name in the host config.
type Reattach struct {
	Protocol        string       `json:"protocol"` // "grpc"
	ProtocolVersion int          `json:"protocol_version"`
	Pid             int          `json:"pid"`
	Test            bool         `json:"test"` // the plugin exits on its own; the host never kills it
	Addr            ReattachAddr `json:"addr"`
}

// ReattachAddr is where the plugin listens.
type ReattachAddr struct {
	Network string `json:"network"` // "unix" or "tcp"
	String  string `json:"string"`
}
