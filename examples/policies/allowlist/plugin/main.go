package main

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Options{Name: "allowlist", Version: "0.1.0", Policy: policy{}})
}

type policy struct{}

func (policy) NewPolicy(_ context.Context, config json.RawMessage) (plugin.Decider, error) {
	var c struct {
		Servers []string `json:"servers"`
	}
	if err := json.Unmarshal(config, &c); err != nil || len(c.Servers) == 0 {
		return nil, errors.New("config: servers must list at least one server")
	}
	return plugin.DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		if slices.Contains(c.Servers, e.Server.Name) {
			return plugin.Allow(), nil
		}
		return plugin.Deny("server " + e.Server.Name + " is not in the allowlist"), nil
	}), nil
}
