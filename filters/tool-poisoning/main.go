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
	// Action is what a finding does by default: "withhold" (the tool is
	// hidden from the agent and cannot be called) or "warn" (it is listed,
	// and the finding logged and kept from nexus lock).
	Action string `json:"action"`
	// Rules sets a rule's action, by rule id: "withhold", "warn" or "off".
	Rules map[string]string `json:"rules"`
	// MaxDescription bounds a description, MaxDefinition a whole
	// definition, in bytes (0: the defaults).
	MaxDescription int `json:"max_description"`
	MaxDefinition  int `json:"max_definition"`
	// Ignore lists "server.tool" globs that are not scanned.
	Ignore []string `json:"ignore"`
}

const (
	actionWithhold = "withhold"
	actionWarn     = "warn"
	actionOff      = "off"

	defaultMaxDescription = 4096
	defaultMaxDefinition  = 64 << 10
)

var (
	actions map[string]string // rule -> withhold or warn; absent: off
	on      map[string]bool
	limits  Limits
	ignore  []filter.Glob
)

func configure(c Config) error {
	def := c.Action
	if def == "" {
		def = actionWithhold
	}
	if def != actionWithhold && def != actionWarn {
		return errors.New("config: action: " + strconv.Quote(c.Action) + " is not an action; want \"withhold\" or \"warn\"")
	}
	actions, on = map[string]string{}, map[string]bool{}
	for _, r := range rules {
		actions[r] = def
	}
	for r, a := range c.Rules {
		if _, ok := actions[r]; !ok {
			return errors.New("config: rules: " + strconv.Quote(r) + " is not a rule; the rules are " + strings.Join(rules, ", "))
		}
		if a != actionWithhold && a != actionWarn && a != actionOff {
			return errors.New("config: rules: " + r + " = " + strconv.Quote(a) + " is not an action; want \"withhold\", \"warn\" or \"off\"")
		}
		actions[r] = a
	}
	for r, a := range actions {
		if a == actionOff {
			delete(actions, r)
		} else {
			on[r] = true
		}
	}
	limits = Limits{Description: defaultMaxDescription, Definition: defaultMaxDefinition}
	for _, l := range []struct {
		name string
		v    int
		to   *int
	}{{"max_description", c.MaxDescription, &limits.Description}, {"max_definition", c.MaxDefinition, &limits.Definition}} {
		if l.v < 0 {
			return errors.New("config: " + l.name + ": " + strconv.Itoa(l.v) + " is negative; give a size in bytes, or 0 for the default")
		}
		if l.v > 0 {
			*l.to = l.v
		}
	}
	var err error
	ignore, err = filter.ToolGlobs("ignore", c.Ignore)
	return err
}

// The listing of the last event, parsed once for all its events.
var (
	listingID string
	others    map[string]string
	othersFor string // the server others was made for
)

func decide(v *filter.View) event.Decision {
	if v.Method() != "tools/list" || !v.HasTool() {
		return filter.Allow()
	}
	server, tool := v.Server(), v.Tool()
	name := server + "." + tool
	for _, g := range ignore {
		if g.Match(name) {
			return filter.Allow()
		}
	}
	def := v.Definition()
	if def == nil {
		return filter.Allow() // a host before ABI 1.1 sends no definition
	}
	if id := v.ListingID(); id != listingID || server != othersFor {
		listingID, othersFor = id, server
		others = listingNames(v.Listing(), server)
	}
	found := scan(Subject{Server: server, Tool: tool, Definition: def, Others: others}, limits, on)
	if len(found) == 0 {
		return filter.Allow()
	}
	flags := make([]string, len(found))
	withhold := -1
	for i, f := range found {
		flags[i] = f.String()
		if withhold < 0 && actions[f.Rule] == actionWithhold {
			withhold = i
		}
	}
	if withhold < 0 {
		return filter.Warn(flags...)
	}
	// The reason reaches the model: it names the rule and the place, never
	// what the definition says (the flags, which the host logs and audits,
	// do).
	f := found[withhold]
	reason := "hidden: " + event.Quotable(server) + "." + event.Quotable(tool) + " looks poisoned: rule " + f.Rule + " in " + event.QuotablePath(f.Where)
	if len(flags) > 1 {
		reason += " (and " + strconv.Itoa(len(flags)-1) + " more)"
	}
	return filter.Withhold(reason, flags...)
}

func init() {
	filter.Config(configure)
	filter.PolicyView(decide)
}

func main() { filter.Main() }
