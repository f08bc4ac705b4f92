package main

import (
	"encoding/json"
	"errors"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
)

// Config names the field of structuredContent to redact.
type Config struct {
	Field string `json:"field"`
}

var field string

func configure(c Config) error {
	if c.Field == "" {
		return errors.New("config: field is required")
	}
	field = c.Field
	return nil
}

func sanitize(v *filter.View) event.Decision {
	raw := v.Result()
	if len(raw) == 0 {
		return filter.Allow()
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(raw, &result) != nil {
		return filter.Allow()
	}
	var structured map[string]json.RawMessage
	if json.Unmarshal(result["structuredContent"], &structured) != nil {
		return filter.Allow()
	}
	if _, ok := structured[field]; !ok {
		return filter.Allow()
	}
	structured[field] = json.RawMessage(`"[redacted]"`)
	result["structuredContent"], _ = json.Marshal(structured)
	out, err := json.Marshal(result)
	if err != nil {
		return filter.Fail(err)
	}
	return filter.ModifyResult(out, "redacted "+field)
}

func init() {
	filter.Config(configure)
	filter.SanitizerView(sanitize)
}

func main() { filter.Main() }
