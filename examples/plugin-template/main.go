package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/plugin"
)

func main() {
	plugin.Serve(plugin.Options{
		Name:      "plugin-template",
		Version:   "0.1.0",
		Policy:    denyTools{},
		Sanitizer: redact{},
	})
}

// ---- the policy: deny tools whose "server.tool" name matches a glob

type denyTools struct{}

// Interface guards: the compiler checks what the plugin claims to serve.
var (
	_ plugin.Policy         = denyTools{}
	_ plugin.SchemaProvider = denyTools{}
)

// ConfigSchema is checked by the host when it loads the config, so
// NewPolicy can trust the shape of what it gets.
func (denyTools) ConfigSchema() json.RawMessage {
	return json.RawMessage(`{
		"type": "object",
		"required": ["deny"],
		"additionalProperties": false,
		"properties": {
			"deny": {"type": "array", "items": {"type": "string"}, "minItems": 1,
			         "description": "server.tool globs to deny, e.g. \"github.delete_*\""}
		}
	}`)
}

// NewPolicy runs once for each filter that uses the plugin, with that
// filter's config; what it returns answers that filter's events.
func (denyTools) NewPolicy(_ context.Context, config json.RawMessage) (plugin.Decider, error) {
	var c struct {
		Deny []string `json:"deny"`
	}
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	for _, g := range c.Deny {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("deny: %q is not a valid glob: %v", g, err)
		}
	}
	return plugin.DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		if e.Tool == nil {
			return plugin.Allow(), nil
		}
		name := e.Server.Name + "." + e.Tool.Name
		for _, g := range c.Deny {
			if ok, _ := path.Match(g, name); ok {
				plugin.Logger().Info("denied", "tool", name, "agent", e.Agent.ID)
				return plugin.Deny(name + " matches " + g), nil
			}
		}
		return plugin.Allow(), nil
	}), nil
}

// ---- the sanitizer: replace a regular expression in results

type redact struct{}

var (
	_ plugin.Sanitizer      = redact{}
	_ plugin.SchemaProvider = redact{}
)

func (redact) ConfigSchema() json.RawMessage {
	return json.RawMessage(`{
		"type": "object",
		"required": ["pattern"],
		"additionalProperties": false,
		"properties": {
			"pattern": {"type": "string", "minLength": 1, "description": "RE2 regular expression to redact"},
			"replacement": {"type": "string", "default": "[redacted]"}
		}
	}`)
}

func (redact) NewSanitizer(_ context.Context, config json.RawMessage) (plugin.Decider, error) {
	c := struct {
		Pattern     string `json:"pattern"`
		Replacement string `json:"replacement"`
	}{Replacement: "[redacted]"}
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	re, err := regexp.Compile(c.Pattern)
	if err != nil {
		return nil, fmt.Errorf("pattern: %v", err)
	}
	// The replacement goes into JSON strings: encode it as one.
	repl, _ := json.Marshal(c.Replacement)
	repl = repl[1 : len(repl)-1]
	return plugin.DecideFunc(func(_ context.Context, e *event.Event) (event.Decision, error) {
		if !re.Match(e.Result) {
			return plugin.Allow(), nil
		}
		out := re.ReplaceAllLiteral(e.Result, repl)
		if !json.Valid(out) {
			// The pattern cut through JSON syntax: refuse rather than pass
			// the secret or break the result.
			return plugin.Deny("the redaction pattern matched JSON syntax; result withheld"), nil
		}
		return plugin.ModifyResult(out, "redacted "+c.Pattern), nil
	}), nil
}
