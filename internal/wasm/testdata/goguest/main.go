// Command goguest is a Go filter for the runtime's tests. Its config picks
// what it does; "fields" (the default) denies with every field it can read
// through the host functions, so the test sees what the host sent.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

type config struct {
	Mode string `json:"mode"`
}

var mode = "fields"

func decide(v *filter.View) event.Decision {
	switch mode {
	case "allow":
		return filter.Allow()
	case "panic":
		panic("boom")
	case "exit":
		os.Exit(3)
	case "bomb":
		var keep [][]byte
		for {
			keep = append(keep, make([]byte, 8<<20))
		}
	case "stdout":
		line := strings.Repeat("x", 1023) + "\n"
		for range 5 << 10 {
			fmt.Print(line)
		}
		fmt.Fprintln(os.Stderr, "done writing")
		return filter.Allow()
	case "sleep":
		time.Sleep(time.Second)
		return filter.Allow()
	case "full":
		e, err := v.Event()
		if err != nil {
			return filter.Fail(err)
		}
		b, _ := json.Marshal(e)
		return filter.Deny(string(b))
	case "listing":
		// The 1.1 fields of a tools/list event, returned as flags; a
		// definition that mentions "withhold" is withheld.
		def, listing, id := v.Definition(), v.Listing(), v.ListingID()
		flags := []string{"definition " + string(def), "listing " + string(listing), "id " + id}
		if strings.Contains(string(def), "withhold") {
			return filter.Withhold("withheld", flags...)
		}
		return filter.Warn(flags...)
	case "modify":
		if v.Phase() == event.PhaseResponse {
			return filter.ModifyResult(json.RawMessage(`{"content":[{"type":"text","text":"replaced"}]}`), "replaced")
		}
		return filter.ModifyParams(json.RawMessage(`{"name":"echo","arguments":{"message":"changed"}}`), "changed")
	}
	f := map[string]any{
		"phase": v.Phase(), "method": v.Method(), "server": v.Server(), "tool": v.Tool(), "hasTool": v.HasTool(),
		"agent": v.AgentID(), "permission": v.Permission(), "session": v.Session(),
		"params": string(v.Params()), "result": string(v.Result()),
	}
	if a := v.Annotations(); a != nil {
		f["destructive"] = a.Destructive()
	}
	var texts []string
	v.Texts(func(i int, text string) bool {
		texts = append(texts, fmt.Sprintf("%d:%s", i, text))
		return true
	})
	f["texts"] = texts
	b, _ := json.Marshal(f)
	filter.Infof("fields read")
	fmt.Println("to stdout")
	return filter.Deny(string(b))
}

func init() {
	filter.Config(func(c config) error {
		if c.Mode == "refuse" {
			return fmt.Errorf("mode %q: this filter refuses its config", c.Mode)
		}
		if c.Mode != "" {
			mode = c.Mode
		}
		return nil
	})
	filter.PolicyView(decide)
	filter.SanitizerView(decide)
}

func main() { filter.Main() }
