package host

import "github.com/nexus-mcp/nexus/internal/explain"

// DescribeOptions say what an error Describe explains was about, and how
// the program that shows it lets a person act: the agent, the server
// when the error does not say, the request's timeout, and the Hints.
type DescribeOptions = explain.Options

// Hints name the commands and flags a program offers, for the fixes of
// a Report: the nexus command line names its own; the zero value names
// none and points at the config and the API instead.
type Hints = explain.Hints

// Describe explains an error a host call returned to a person, as a
// *Report with the context the call itself could not give: the server it
// is about and the config file and layer that server (and the agent, and
// the filter that refused) came from, what else was configured, the
// nearest names. Reports pass through unchanged, and so do errors about
// no server (a usage error). One package (internal/explain) builds every
// report, for the command line, the gateway and the console alike; a
// program prints what it returns.
func Describe(cfg *Config, err error, o DescribeOptions) error {
	return explain.Describe(cfg, err, o)
}
