package main

import (
	"errors"
	"slices"
	"strconv"
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
			return errors.New("config: disable: unknown kind " + strconv.Quote(k) + " (kinds: " + strings.Join(Kinds, ", ") + ")")
		}
	}
	for _, k := range c.Keys {
		if k == "" || strings.ContainsAny(k, " =:") {
			return errors.New("config: keys: " + strconv.Quote(k) + " is not a key name")
		}
	}
	r := newRedactor()
	for _, k := range c.Disable {
		r.off[slices.Index(Kinds, k)] = true
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
	var n counts
	out, changed, err := filter.EditStrings(result, func(p filter.Path, s string) (string, bool) {
		structured := len(p) > 0 && p[0].Key == "structuredContent"
		if structured && len(p) > 1 && p.Last() != "" && red.secretKey(p.Last()) && !red.off[kindSecret] {
			if _, _, ok := red.realValue(s); ok {
				n[kindSecret]++
				return redacted[kindSecret], true // {"password": "..."}
			}
		}
		if p.Last() != "text" && !structured {
			return s, false
		}
		return red.redact(s, &n)
	})
	if err != nil {
		return filter.Fail(errors.New("reading the result: " + err.Error()))
	}
	if !changed {
		return filter.Allow()
	}
	return filter.ModifyResult(out, reason(&n))
}

// reason says what was redacted: "redacted 3 secrets (jwt, secret)", the
// kinds in alphabetical order. (No fmt or sort: both are slow in WASM.)
func reason(n *counts) string {
	total := 0
	var kinds []byte
	for _, k := range byName {
		if n[k] == 0 {
			continue
		}
		if total > 0 {
			kinds = append(kinds, ", "...)
		}
		kinds = append(kinds, Kinds[k]...)
		total += n[k]
	}
	noun := " secrets ("
	if total == 1 {
		noun = " secret ("
	}
	return "redacted " + strconv.Itoa(total) + noun + string(kinds) + ")"
}

// byName lists the kinds in alphabetical order of their names.
var byName = func() []kind {
	ks := make([]kind, numKinds)
	for k := range ks {
		ks[k] = kind(k)
	}
	slices.SortFunc(ks, func(a, b kind) int { return strings.Compare(Kinds[a], Kinds[b]) })
	return ks
}()

func init() {
	filter.Config(configure)
	filter.SanitizerView(sanitize)
}

func main() { filter.Main() }
