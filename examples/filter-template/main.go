package main

import (
	"errors"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config is what the filter block's config holds:
//
//	config = { words = ["rm -rf", "DROP TABLE"] }
type Config struct {
	Words []string `json:"words"`
}

var words []string

// configure runs once per instance, before any event. An error refuses the
// filter at load, with this text.
func configure(c Config) error {
	if len(c.Words) == 0 {
		return errors.New(`config: words must list at least one word, such as ["rm -rf"]`)
	}
	for _, w := range c.Words {
		words = append(words, strings.ToLower(w))
	}
	return nil
}

// decide is the policy. The View fetches single fields from the host, so
// a call that is not a tools/call costs one field and no parsing.
func decide(v *filter.View) event.Decision {
	if v.Method() != "tools/call" {
		return filter.Allow()
	}
	args := strings.ToLower(string(v.Params()))
	for _, w := range words {
		if strings.Contains(args, w) {
			filter.Infof("denied %s.%s: %q in its arguments", v.Server(), v.Tool(), w)
			return filter.Denyf("the arguments of %s.%s contain %q", v.Server(), v.Tool(), w)
		}
	}
	return filter.Allow()
}

// init registers the handlers: a WASM build runs init functions when the
// host starts an instance, and never runs main.
func init() {
	filter.Config(configure)
	filter.PolicyView(decide)
}

// main serves events on stdin when the filter is built natively (go run .
// < event.json), which is handy for debugging; in WASM it does nothing.
func main() { filter.Main() }
