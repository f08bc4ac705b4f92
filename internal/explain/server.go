package explain

import (
	"errors"
	"fmt"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/auth"
	"github.com/nexus-mcp/nexus/internal/config"
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/registry"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
	"github.com/nexus-mcp/nexus/internal/transport/stdio"
)

func diagContext(srv *config.Server) diag.Context {
	return diag.Context{Server: srv.Name, Source: srv.Source, Command: srv.Command, URL: srv.URL}
}

// Server explains an error from server srv's session (its transport, the
// protocol, the registry that connects it) as a *diag.Report with the
// server's context: where it is configured, its command or URL, likely
// causes, a fix. stderr, when known, is the server's stderr tail, for a
// handshake that timed out. A report passes through; an error it does not
// know is wrapped with the server's name.
func Server(srv *config.Server, err error, stderr []string) error {
	if err == nil {
		return nil
	}
	var de *registry.DisabledError
	if errors.As(err, &de) {
		return Disabled(srv)
	}
	var be *registry.BackoffError
	if errors.As(err, &be) {
		// Say what went wrong last time, and that it is not retried yet.
		var rep *diag.Report
		if inner := Server(srv, be.Err, nil); errors.As(inner, &rep) {
			cp := *rep
			cp.Problem = fmt.Sprintf("%s; the next reconnection attempt is in %s", rep.Problem, be.Retry.Round(time.Millisecond))
			cp.Cause = err
			return &cp
		}
		return err
	}
	c := diagContext(srv)
	var ae *httptransport.AuthError
	if errors.As(err, &ae) {
		// Before Error below: the auth error holds internal/auth's facts.
		return explainHTTP(c, err)
	}
	if r := typed(err); r != nil {
		return r // a plugin's (a transport plugin's crash, its config)
	}
	var rep *diag.Report
	if errors.As(err, &rep) {
		return err
	}
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
		return diag.HandshakeTimeout(c, te.After, stderr, err)
	case errors.As(err, &uve):
		return &diag.Report{Title: "MCP Connection Failed", Server: c.Server, Source: c.Source, Command: c.Command,
			Problem: uve.Error(), Cause: err}
	}
	if r := explainHTTP(c, err); r != nil {
		return r
	}
	return fmt.Errorf("server %q: %w", srv.Name, err)
}

// explainHTTP reports the HTTP transport's errors; nil for other errors.
func explainHTTP(c diag.Context, err error) *diag.Report {
	var (
		ae  *httptransport.AuthError
		se  *httptransport.HTTPStatusError
		be  *httptransport.BlockedAddressError
		re  *httptransport.RedirectError
		xe  *httptransport.SessionExpiredError
		ie  *httptransport.InvalidSessionIDError
		ue  *httptransport.UnexpectedResponseError
		pe  *httptransport.ProtocolError
		ce  *httptransport.ConfigError
		rqe *httptransport.RequestError
	)
	report := func(title, problem string) *diag.Report {
		return &diag.Report{Title: title, Server: c.Server, Source: c.Source, URL: c.URL, Problem: problem, Cause: err}
	}
	inFile := ""
	if c.Source.File != "" {
		inFile = " in " + c.Source.String()
	}
	switch {
	case errors.As(err, &ae):
		var oe *auth.Error
		if errors.As(ae.Err, &oe) {
			// internal/auth's facts, with the server's context where they
			// lack it; the cause chain still leads to the transport's error.
			r := oauth(oe)
			if r.Server == "" {
				r.Server = c.Server
			}
			if r.URL == "" {
				r.URL = c.URL
			}
			r.Cause = err
			return r
		}
		r := report("MCP Authorization Failed", ae.Error())
		r.Fix = []string{"Log in again: nexus auth login " + c.Server, "See the server's authorization settings: nexus auth status " + c.Server}
		return r
	case errors.As(err, &se):
		r := diag.HTTPStatus(c, se.Method, se.URL, se.Status, se.BodyExcerpt, se.Header.Get("Retry-After"), err)
		if se.Fallback != nil {
			r.Details = append(r.Details, diag.Section{Heading: "Legacy HTTP+SSE fallback", Lines: []string{se.Fallback.Error()}})
		}
		return r
	case errors.As(err, &be):
		r := report("MCP Connection Refused", be.Error())
		r.Causes = []string{fmt.Sprintf("%s resolves to %s, %s", be.Host, be.IP, be.Reason)}
		if be.Always {
			r.Fix = []string{"Nexus never connects to cloud metadata addresses; check \"url\"" + inFile}
		} else {
			r.Fix = []string{"If the server really is on your network, set allow_private_networks = true for it" + inFile,
				"Otherwise check \"url\" and the host's DNS records"}
		}
		return r
	case errors.As(err, &re):
		r := report("MCP Connection Failed", re.Error())
		r.Causes = []string{"The URL is an old or alternative address of the server", "A login wall or proxy redirects unauthenticated requests"}
		r.Fix = []string{"Set \"url\"" + inFile + " to the final address: " + re.Location}
		return r
	case errors.As(err, &xe):
		r := report("MCP Session Expired", xe.Error())
		r.Fix = []string{"Run the command again: Nexus starts a new session on reconnect"}
		return r
	case errors.As(err, &ie):
		r := report("MCP Protocol Error", ie.Error())
		r.Causes = []string{"The server (or a proxy in front of it) sends a malformed Mcp-Session-Id header"}
		r.Fix = []string{"Report this to the server's maintainers"}
		return r
	case errors.As(err, &ue):
		r := report("MCP HTTP Error", ue.Error())
		r.Causes = []string{"The URL is a web page, not the server's MCP endpoint (often it ends in /mcp)",
			"A proxy, firewall or login page answered instead of the server"}
		r.Fix = []string{"Check \"url\"" + inFile}
		return r
	case errors.As(err, &pe):
		r := report("MCP Protocol Error", pe.Error())
		r.Fix = []string{"Report this to the server's maintainers"}
		return r
	case errors.As(err, &ce):
		r := report("MCP Configuration Error", ce.Error())
		r.Fix = []string{"Fix the server's entry" + inFile}
		return r
	case errors.As(err, &rqe):
		r := report("MCP Connection Failed", rqe.Error())
		if rqe.Timeout() {
			r.Causes = []string{"The server is slow or overloaded", "A firewall drops the connection silently"}
			r.Fix = []string{"Raise \"timeout\"" + inFile + " if the server is known to be slow"}
		} else {
			r.Causes = []string{"The server is not running or not reachable from here", "The URL's host or port is wrong", "TLS failed (an untrusted or mismatched certificate)"}
			r.Fix = []string{"Check that the server runs and that \"url\"" + inFile + " is right",
				diag.TryByHand(c.URL)}
		}
		return r
	}
	return nil
}

// Disabled is the report on a server that is configured but disabled.
func Disabled(srv *config.Server) error {
	return &diag.Report{Title: "MCP Server Disabled", Server: srv.Name, Source: srv.Source,
		Problem: "this server is disabled in its config",
		Fix:     []string{`Set "enabled": true (or remove "disabled": true) in the file above to use it.`}}
}

// UnsupportedTransport is the report on a server whose transport this
// build does not have.
func UnsupportedTransport(srv *config.Server) error {
	return &diag.Report{Title: "MCP Connection Failed", Server: srv.Name, Source: srv.Source, URL: srv.URL,
		Problem: fmt.Sprintf("the %q transport is not available in this build", srv.Type),
		Fix:     []string{"Use \"type\": \"stdio\", \"http\", \"sse\" or a transport plugin."}}
}
