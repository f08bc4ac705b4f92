package main

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config is the filter's config block.
type Config struct {
	// Allow lists "server.tool" globs (path.Match syntax: *, ?, [a-z]).
	Allow []string `json:"allow"`
}

var allow []string

func configure(c Config) error {
	if len(c.Allow) == 0 {
		return errors.New(`config: allow must list at least one "server.tool" glob, such as "github.get_*"`)
	}
	for _, g := range c.Allow {
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("config: allow: bad glob %q: %v", g, err)
		}
		if !strings.Contains(g, ".") {
			return fmt.Errorf("config: allow: %q has no dot; write \"server.tool\" (use \"%s.*\" for every tool of a server)", g, g)
		}
	}
	allow = c.Allow
	return nil
}

// decide needs two fields of the event, so it reads them through the View
// and never parses the event.
func decide(v *filter.View) event.Decision {
	if !v.HasTool() {
		return filter.Allow() // not about a tool: resources, prompts, ...
	}
	name := v.Server() + "." + v.Tool()
	for _, g := range allow {
		if ok, _ := path.Match(g, name); ok {
			return filter.Allow()
		}
	}
	if v.Method() == "tools/list" {
		return filter.Deny("hidden: not in the tool allowlist")
	}
	return filter.Denyf("tool %s is not in the allowlist (allowed: %s)", name, strings.Join(allow, ", "))
}

func init() {
	filter.Config(configure)
	filter.PolicyView(decide)
}

func main() { filter.Main() }
