package main

import (
	"context"
	"os"

	"github.com/nexus-mcp/nexus/bench/internal/echo"
	"github.com/nexus-mcp/nexus/host/mcp"
)

func main() {
	if err := echo.Server().Serve(context.Background(), mcp.StdioConn()); err != nil && err.Error() != "EOF" {
		os.Exit(1)
	}
}
