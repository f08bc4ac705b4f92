package main

import (
	"errors"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config is the filter's config block.
type Config struct {
	// Allow lists "server.tool" globs (path.Match syntax: *, ?, [a-z]).
	Allow []string `json:"allow"`
}

var (
	allow    []filter.Glob // compiled once: matching is then a string comparison
	patterns []string
)

func configure(c Config) error {
	if len(c.Allow) == 0 {
		return errors.New(`config: allow must list at least one "server.tool" glob, such as "github.get_*"`)
	}
	var err error
	allow, err = filter.ToolGlobs("allow", c.Allow)
	patterns = c.Allow
	return err
}

// decide needs two fields of the event, so it reads them through the View
// and never parses the event.
func decide(v *filter.View) event.Decision {
	if !v.HasTool() {
		return filter.Allow() // not about a tool: resources, prompts, ...
	}
	name := v.Server() + "." + v.Tool()
	for _, g := range allow {
		if g.Match(name) {
			return filter.Allow()
		}
	}
	if v.Method() == "tools/list" {
		return filter.Deny("hidden: not in the tool allowlist")
	}
	return filter.Deny("tool " + name + " is not in the allowlist (allowed: " + strings.Join(patterns, ", ") + ")")
}

func init() {
	filter.Config(configure)
	filter.PolicyView(decide)
}

func main() { filter.Main() }
