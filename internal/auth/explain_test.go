package auth_test

import (
	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/explain"
)

// The reports on this package's errors are internal/explain's, which
// imports this package: its tests read them through Explain.
func init() { auth.Explain = explain.Error }
