package host

import (
	"time"

	"github.com/nexus-mcp/nexus/internal/explain"
)

// DescribeOptions say what an error Describe explains was about, and how
// the program that shows it lets a person act: the agent, the server
// when the error does not say, the request's timeout, and the Hints.
type DescribeOptions struct {
	// Agent made the request; Server is what it was about, when the error
	// does not say (a *ServerError does).
	Agent, Server string
	// Timeout is the request timeout the caller used, for a request that
	// ran out of it.
	Timeout time.Duration
	Hints   Hints
}

// Hints name the commands and flags a program offers, for the fixes of
// a Report: the nexus command line names its own; the zero value names
// none and points at the config and the API instead.
type Hints struct {
	// ListTools is the command that lists server's tools ("" for every
	// server), with their schemas when schemas is set.
	ListTools func(server string, schemas bool) string
	// ListServers is the command that lists the configured servers.
	ListServers string
	// TimeoutFlag is the flag that gives a request longer.
	TimeoutFlag string
	// Arguments says how the program takes a tool's arguments, for a call
	// whose arguments break the tool's schema.
	Arguments string
}

// Describe explains an error a host call returned to a person, as a
// *Report with the context the call itself could not give: the server it
// is about and the config file and layer that server (and the agent, and
// the filter that refused) came from, what else was configured, the
// nearest names. Reports pass through unchanged, and so do errors about
// no server (a usage error). One package (internal/explain) builds every
// report, for the command line, the gateway and the console alike; a
// program prints what it returns.
func Describe(cfg *Config, err error, o DescribeOptions) error {
	return hostErr(explain.Describe(internalConfig(cfg), err, explain.Options{Agent: o.Agent, Server: o.Server, Timeout: o.Timeout, Hints: explain.Hints(o.Hints)}))
}
