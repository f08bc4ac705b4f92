package main

import (
	"errors"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config names the agent that may not call destructive tools.
type Config struct {
	Agent string `json:"agent"`
}

var agent string

func configure(c Config) error {
	if c.Agent == "" {
		return errors.New("config: agent is required")
	}
	agent = c.Agent
	return nil
}

func decide(e *event.Event) event.Decision {
	if e.Method != "tools/call" || e.Agent.ID != agent || e.Tool == nil || !e.Tool.Annotations.Destructive() {
		return filter.Allow()
	}
	return filter.Denyf("agent %s may not call destructive tools (%s.%s)", e.Agent.ID, e.Server.Name, e.Tool.Name)
}

func init() {
	filter.Config(configure)
	filter.Policy(decide)
}

func main() { filter.Main() }
