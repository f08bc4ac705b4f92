package plugin_test

import (
	"github.com/nexus-mcp/nexus/internal/explain"
	"github.com/nexus-mcp/nexus/internal/plugin"
)

// The reports on this package's errors are internal/explain's, which
// imports this package: its tests read them through Explain.
func init() { plugin.Explain = explain.Error }
