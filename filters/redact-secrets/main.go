package main

import (
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
	"github.com/nexus-mcp/nexus/sdk/filter/redact"
)

// Config is the filter's config block.
type Config struct {
	// Disable lists kinds not to redact (see Kinds).
	Disable []string `json:"disable"`
	// Keys adds key names whose values count as secrets in key=value text
	// (compared case-insensitively, as the end of the key: "session_id"
	// also covers "app_session_id").
	Keys []string `json:"keys"`
}

func configure(c Config) error {
	for _, k := range c.Disable {
		if !slices.Contains(redact.Kinds, k) {
			return errors.New("config: disable: unknown kind " + strconv.Quote(k) + " (kinds: " + strings.Join(redact.Kinds, ", ") + ")")
		}
	}
	for _, k := range c.Keys {
		if k == "" || strings.ContainsAny(k, " =:") {
			return errors.New("config: keys: " + strconv.Quote(k) + " is not a key name")
		}
	}
	r := redact.New()
	for _, k := range c.Disable {
		r.Disable(k)
	}
	for _, k := range c.Keys {
		r.AddKey(k)
	}
	red = r
	return nil
}

var red = redact.New()

// sanitize redacts the strings of the result that people and models read:
// every "text" (content items, embedded resources, resources/read
// contents, prompt messages) and everything under structuredContent.
// It reads only the result, through the View, so the event is never
// parsed.
func sanitize(v *filter.View) event.Decision {
	result := v.Result()
	if len(result) == 0 {
		return filter.Allow()
	}
	var n redact.Counts
	out, changed, err := filter.EditStrings(result, func(p filter.Path, s string) (string, bool) {
		structured := len(p) > 0 && p[0].Key == "structuredContent"
		if structured && len(p) > 1 {
			return red.Value(p.Last(), s, &n) // {"password": "..."} whole
		}
		if p.Last() != "text" && !structured {
			return s, false
		}
		return red.String(s, &n)
	})
	if err != nil {
		return filter.Fail(errors.New("reading the result: " + err.Error()))
	}
	if !changed {
		return filter.Allow()
	}
	return filter.ModifyResult(out, n.Reason())
}

func init() {
	filter.Config(configure)
	filter.SanitizerView(sanitize)
}

func main() { filter.Main() }
