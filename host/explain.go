package host

import (
	"errors"
	"fmt"

	"github.com/nexus-mcp/nexus/host/config"
	"github.com/nexus-mcp/nexus/host/diag"
	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/host/transport/stdio"
)

func diagContext(srv *config.Server) diag.Context {
	return diag.Context{Server: srv.Name, Source: srv.Source, Command: srv.Command, URL: srv.URL}
}

// explain maps transport and protocol errors to reports with the server's
// context. sc, when known, supplies the stderr tail.
func explain(srv *config.Server, err error, sc *stdio.Conn) error {
	if err == nil {
		return nil
	}
	var rep *diag.Report
	if errors.As(err, &rep) {
		return err
	}
	c := diagContext(srv)
	var (
		se  *stdio.StartError
		ee  *stdio.ExitError
		te  *mcp.TimeoutError
		ie  *mcp.InvalidMessageError
		fe  *mcp.FrameTooLargeError
		uve *mcp.UnsupportedVersionError
	)
	switch {
	case errors.As(err, &se):
		exe := ""
		if len(se.Command) > 0 {
			exe = se.Command[0]
		}
		switch se.Kind {
		case stdio.NotFound:
			return diag.CommandNotFound(c, exe, se.Path, err)
		case stdio.PermissionDenied:
			return diag.PermissionDenied(c, exe, err)
		}
		return &diag.Report{Title: "MCP Server Launch Failed", Server: c.Server, Source: c.Source, Command: c.Command,
			Problem: err.Error(), Cause: err,
			Fix: []string{"Check the server's command and cwd in the config file."}}
	case errors.As(err, &ee):
		return diag.ServerCrashed(c, ee.Code, ee.Signal, ee.Stderr, err)
	case errors.As(err, &fe):
		return diag.FrameTooLarge(c, fe.Limit, err)
	case errors.As(err, &ie):
		return diag.InvalidJSONFromServer(c, ie.Frame, ie.Offset, err)
	case errors.As(err, &te) && te.Method == mcp.MethodInitialize:
		var tail []string
		if sc != nil {
			tail = sc.Stderr()
		}
		return diag.HandshakeTimeout(c, te.After, tail, err)
	case errors.As(err, &uve):
		return &diag.Report{Title: "MCP Connection Failed", Server: c.Server, Source: c.Source, Command: c.Command,
			Problem: uve.Error(), Cause: err}
	}
	return fmt.Errorf("server %q: %w", srv.Name, err)
}

func explainDisabled(srv *config.Server) error {
	return &diag.Report{Title: "MCP Server Disabled", Server: srv.Name, Source: srv.Source,
		Problem: "this server is disabled in its config",
		Fix:     []string{`Set "enabled": true (or remove "disabled": true) in the file above to use it.`}}
}

func explainUnsupportedTransport(srv *config.Server) error {
	return &diag.Report{Title: "MCP Connection Failed", Server: srv.Name, Source: srv.Source, URL: srv.URL,
		Problem: fmt.Sprintf("the %q transport is not available in this build", srv.Type),
		Fix:     []string{"Use a stdio server (\"command\") for now; streamable HTTP and SSE support is being added."}}
}
