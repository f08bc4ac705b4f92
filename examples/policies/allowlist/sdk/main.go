package main

import (
	"errors"
	"slices"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config lists the servers agents may use.
type Config struct {
	Servers []string `json:"servers"`
}

var servers []string

func configure(c Config) error {
	if len(c.Servers) == 0 {
		return errors.New("config: servers must list at least one server")
	}
	servers = c.Servers
	return nil
}

func decide(v *filter.View) event.Decision {
	if slices.Contains(servers, v.Server()) {
		return filter.Allow()
	}
	return filter.Deny("server " + v.Server() + " is not in the allowlist")
}

func init() {
	filter.Config(configure)
	filter.PolicyView(decide)
}

func main() { filter.Main() }
