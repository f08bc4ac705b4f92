package config

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
)

// Masking literal credentials in what config show and compile print: a
// secret written into a config file should move to a variable, and
// printing it where a person (or their terminal's scrollback, or a CI
// log) reads it makes matters worse.

const mask = "***"

// secretName is an env, header or query parameter name that holds a
// credential.
var secretName = regexp.MustCompile(`(?i)(token|secret|passw|api[_-]?key|apikey|private[_-]?key|credential|auth|session|signature|^key$|^sig$|^code$)`)

// maskCredential returns val with the credentials in it masked, judged by
// where it stands (ptr: "/url", "/headers/Authorization", "/env/NAME").
func maskCredential(ptr, val string) string {
	switch {
	case ptr == "/url":
		return maskURL(val)
	case strings.HasPrefix(ptr, "/headers/"):
		name := strings.TrimPrefix(ptr, "/headers/")
		if strings.EqualFold(name, "Authorization") || strings.EqualFold(name, "Proxy-Authorization") {
			if scheme, _, ok := strings.Cut(val, " "); ok && scheme != "" {
				return scheme + " " + mask
			}
			return mask
		}
		if secretName.MatchString(name) || strings.EqualFold(name, "Cookie") {
			return mask
		}
	case strings.HasPrefix(ptr, "/env/"):
		if secretName.MatchString(strings.TrimPrefix(ptr, "/env/")) && val != "" {
			return mask
		}
	}
	return val
}

// maskURL masks a URL's password and credential-like query values.
func maskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	changed := false
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), mask)
		} else {
			u.User = url.User(mask)
		}
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			if secretName.MatchString(k) {
				for i := range vs {
					vs[i] = mask
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if !changed {
		return raw
	}
	return strings.ReplaceAll(u.String(), url.QueryEscape(mask), mask)
}

// maskWarning says what was masked and how to stop writing secrets into
// config files.
func (c *compiler) maskWarning() {
	if len(c.masked) == 0 {
		return
	}
	where := map[string]bool{}
	for _, p := range c.masked {
		where[p] = true
	}
	var list []string
	for p := range where {
		list = append(list, strings.TrimPrefix(p, "/"))
	}
	sort.Strings(list)
	c.warns = append(c.warns, Warning{Message: fmt.Sprintf("credentials written in the config file are masked (%s): move each into a sensitive variable or ${NAME} reference so it is never printed; --show-secrets prints them as they are",
		strings.Join(list, ", "))})
}
