package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/nexus-mcp/nexus/sdk/event"
	"github.com/nexus-mcp/nexus/sdk/filter"
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
		if !slices.Contains(Kinds, k) {
			return fmt.Errorf("config: disable: unknown kind %q (kinds: %s)", k, strings.Join(Kinds, ", "))
		}
	}
	for _, k := range c.Keys {
		if k == "" || strings.ContainsAny(k, " =:") {
			return fmt.Errorf("config: keys: %q is not a key name", k)
		}
	}
	r := newRedactor()
	for _, k := range c.Disable {
		r.off[k] = true
	}
	for _, k := range c.Keys {
		r.addKey(k)
	}
	red = r
	return nil
}

var red = newRedactor()

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
	counts := map[string]int{}
	out, changed, err := filter.EditStrings(result, func(p filter.Path, s string) (string, bool) {
		structured := len(p) > 0 && p[0].Key == "structuredContent"
		if structured && len(p) > 1 && p.Last() != "" && red.secretKey(p.Last()) && !red.off["secret"] {
			if _, _, ok := red.realValue(s); ok {
				counts["secret"]++
				return "[REDACTED:secret]", true // {"password": "..."}
			}
		}
		if p.Last() != "text" && !structured {
			return s, false
		}
		return red.redact(s, counts)
	})
	if err != nil {
		return filter.Fail(fmt.Errorf("reading the result: %w", err))
	}
	if !changed {
		return filter.Allow()
	}
	return filter.ModifyResult(out, reason(counts))
}

func reason(counts map[string]int) string {
	kinds := make([]string, 0, len(counts))
	n := 0
	for k, c := range counts {
		kinds = append(kinds, k)
		n += c
	}
	sort.Strings(kinds)
	noun := "secrets"
	if n == 1 {
		noun = "secret"
	}
	return fmt.Sprintf("redacted %d %s (%s)", n, noun, strings.Join(kinds, ", "))
}

func init() {
	filter.Config(configure)
	filter.SanitizerView(sanitize)
}

func main() { filter.Main() }
