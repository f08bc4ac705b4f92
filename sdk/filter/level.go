package filter

import abi "github.com/nexus-mcp/nexus/internal/filterabi"

// Level is a log level: what Log takes and a SetLogger function receives.
type Level = abi.Level

// Log levels, those of the host function "log".
const (
	LevelTrace = abi.LevelTrace
	LevelDebug = abi.LevelDebug
	LevelInfo  = abi.LevelInfo
	LevelWarn  = abi.LevelWarn
	LevelError = abi.LevelError
)
