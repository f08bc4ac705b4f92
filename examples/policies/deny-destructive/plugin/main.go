package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Options{Name: "deny-destructive", Version: "0.1.0", Policy: policy{}})
}

type policy struct{}

func (policy) NewPolicy(_ context.Context, config json.RawMessage) (plugin.Decider, error) {
	var c struct {
		Agent string `json:"agent"`
	}
	if err := json.Unmarshal(config, &c); err != nil || c.Agent == "" {
		return nil, errors.New("config: agent is required")
	}
	return plugin.DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		if e.Method != "tools/call" || e.Agent.ID != c.Agent || e.Tool == nil || !e.Tool.Annotations.Destructive() {
			return plugin.Allow(), nil
		}
		return plugin.Deny(fmt.Sprintf("agent %s may not call destructive tools (%s.%s)", e.Agent.ID, e.Server.Name, e.Tool.Name)), nil
	}), nil
}
