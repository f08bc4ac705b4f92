package plugin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

// readOnly is a policy plugin: for each filter that names it, NewPolicy
// makes a Decider from that filter's config block.
type readOnly struct{}

func (readOnly) NewPolicy(_ context.Context, config json.RawMessage) (plugin.Decider, error) {
	var c struct {
		Prefixes []string `json:"read_prefixes"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, fmt.Errorf("read_prefixes must be a list of strings: %w", err)
	}
	return plugin.DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		if e.Tool == nil {
			return plugin.Allow(), nil // not a tool call
		}
		for _, p := range c.Prefixes {
			if strings.HasPrefix(e.Tool.Name, p) {
				return plugin.Allow(), nil
			}
		}
		return plugin.Deny(e.Tool.Name + " may change something; this agent only reads"), nil
	}), nil
}

// A plugin's main calls Serve with what it implements; the host launches
// the binary, and the SDK speaks the protocol. Here the policy is driven
// directly, as its own tests would.
func Example() {
	opts := plugin.Options{Name: "read-only", Version: "1.0.0", Policy: readOnly{}}
	// In the plugin binary: func main() { plugin.Serve(opts) }

	d, err := opts.Policy.NewPolicy(context.Background(), json.RawMessage(`{"read_prefixes": ["get_", "list_"]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tool := range []string{"list_issues", "delete_repo"} {
		dec, _ := d.Decide(context.Background(), &event.Event{Method: "tools/call", Tool: &event.Tool{Name: tool}})
		fmt.Println(strings.TrimSpace(tool + ": " + dec.Action + " " + dec.Reason))
	}
	// Output:
	// list_issues: allow
	// delete_repo: deny delete_repo may change something; this agent only reads
}
