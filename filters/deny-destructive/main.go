package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config is the filter's config block.
type Config struct {
	// Tools lists globs of tools to treat as destructive whatever their
	// annotations say: "server.tool" globs, or bare tool-name globs that
	// match on any server ("delete_*").
	Tools []string `json:"tools"`
	// AssumeDestructive applies MCP's defaults to tools without
	// annotations: such a tool counts as destructive unless it says
	// readOnlyHint: true. Off by default, since most servers annotate
	// nothing.
	AssumeDestructive bool `json:"assume_destructive"`
	// Hide also hides destructive tools from tools/list.
	Hide bool `json:"hide"`
}

var (
	cfg   Config
	globs []filter.Glob
)

func configure(c Config) error {
	globs = nil
	for _, p := range c.Tools {
		g, err := filter.CompileGlob(p)
		if err != nil {
			return errors.New("config: tools: bad glob " + strconv.Quote(p) + ": " + err.Error())
		}
		globs = append(globs, g)
	}
	cfg = c
	return nil
}

func decide(v *filter.View) event.Decision {
	method := v.Method()
	if !v.HasTool() || (method != "tools/call" && !(cfg.Hide && method == "tools/list")) {
		return filter.Allow()
	}
	if v.Permission() == event.Yolo {
		return filter.Allow()
	}
	why := destructive(v)
	if why == "" {
		return filter.Allow()
	}
	name := v.Server() + "." + v.Tool()
	perm := v.Permission()
	if perm == "" {
		perm = "none"
	}
	if method == "tools/list" {
		return filter.Deny("hidden: " + name + " is destructive (" + why + ")")
	}
	return filter.Deny(name + " is destructive (" + why + "); agent " + strconv.Quote(v.AgentID()) + " has permission " + strconv.Quote(perm) +
		", and only an agent with permission \"yolo\" may call destructive tools")
}

// destructive says why the event's tool counts as destructive, or "".
func destructive(v *filter.View) string {
	server, tool := v.Server(), v.Tool()
	for _, g := range globs {
		subject := tool
		if strings.Contains(g.String(), ".") {
			subject = server + "." + tool
		}
		if g.Match(subject) {
			return "it matches " + strconv.Quote(g.String()) + " in the filter's config"
		}
	}
	a := v.Annotations()
	if a != nil && a.DestructiveHint != nil && *a.DestructiveHint {
		return "its annotations say destructiveHint: true"
	}
	if cfg.AssumeDestructive && a.Destructive() {
		return "it has no annotations saying otherwise, and MCP assumes a tool is destructive unless it is read-only"
	}
	return ""
}

func init() {
	filter.Config(configure)
	filter.PolicyView(decide)
}

func main() { filter.Main() }
