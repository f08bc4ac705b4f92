//go:build !wasip1

package filter_test

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// A policy with a typed config, registered as a filter's init function
// does. Built natively, as here, the filter runs without a host:
// Configure and CallEvent drive it, which is how its tests run; built for
// wasip1 the same code is a WASM filter.
func Example() {
	type Config struct {
		Allow []string `json:"allow"`
	}
	var allow []string
	filter.Config(func(c Config) error { allow = c.Allow; return nil })
	filter.PolicyView(func(v *filter.View) event.Decision {
		if slices.Contains(allow, v.Server()+"."+v.Tool()) {
			return filter.Allow()
		}
		return filter.Denyf("%s is not on the allow list", v.Tool())
	})

	if err := filter.Configure([]byte(`{"allow": ["github.get_issue"]}`)); err != nil {
		fmt.Println(err)
		return
	}
	for _, tool := range []string{"get_issue", "delete_repo"} {
		d := filter.CallEvent(&event.Event{
			Phase:  event.PhaseRequest,
			Method: "tools/call",
			Server: event.Server{Name: "github"},
			Tool:   &event.Tool{Name: tool},
		})
		fmt.Println(strings.TrimSpace(tool + " " + d.Action + " " + d.Reason))
	}
	// Output:
	// get_issue allow
	// delete_repo deny delete_repo is not on the allow list
}
