package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Options{Name: "redact", Version: "0.1.0", Sanitizer: sanitizer{}})
}

type sanitizer struct{}

func (sanitizer) NewSanitizer(_ context.Context, config json.RawMessage) (plugin.Decider, error) {
	var c struct {
		Field string `json:"field"`
	}
	if err := json.Unmarshal(config, &c); err != nil || c.Field == "" {
		return nil, errors.New("config: field is required")
	}
	return plugin.DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		var result map[string]json.RawMessage
		if json.Unmarshal(e.Result, &result) != nil {
			return plugin.Allow(), nil
		}
		var structured map[string]json.RawMessage
		if json.Unmarshal(result["structuredContent"], &structured) != nil {
			return plugin.Allow(), nil
		}
		if _, ok := structured[c.Field]; !ok {
			return plugin.Allow(), nil
		}
		structured[c.Field] = json.RawMessage(`"[redacted]"`)
		result["structuredContent"], _ = json.Marshal(structured)
		out, err := json.Marshal(result)
		if err != nil {
			return event.Decision{}, err
		}
		return plugin.ModifyResult(out, "redacted "+c.Field), nil
	}), nil
}
