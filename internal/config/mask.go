package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Masking literal credentials in what config show and compile print: a
// secret written into a config file should move to a variable, and
// printing it where a person (or their terminal's scrollback, or a CI
// log) reads it makes matters worse. Values from variables, env() and
// ${NAME} are never printed anyway: they are written as references.

// oauthSecrets are the OAuth settings that hold credentials.
var oauthSecrets = map[string]bool{"client_secret": true, "private_key": true, "id_token": true, "idp_client_secret": true, "assertion": true}

// maskCredential returns val with the credentials in it masked, judged by
// where it stands (ptr: "/url", "/headers/Authorization", "/env/NAME",
// "/command/2", "/config/token", ...) and by what it holds (a URL with a
// password or a credential query parameter, anywhere).
func maskCredential(ptr, val string) string {
	if val == "" {
		return val
	}
	key := ptr[strings.LastIndex(ptr, "/")+1:]
	key = strings.NewReplacer("~1", "/", "~0", "~").Replace(key)
	switch {
	case strings.HasPrefix(ptr, "/headers/"):
		if strings.EqualFold(key, "Authorization") || strings.EqualFold(key, "Proxy-Authorization") {
			if scheme, _, ok := strings.Cut(val, " "); ok && scheme != "" {
				return scheme + " " + diag.Mask
			}
			return diag.Mask
		}
		if diag.SecretName.MatchString(key) {
			return diag.Mask
		}
	case strings.HasPrefix(ptr, "/oauth/"):
		if oauthSecrets[key] {
			return diag.Mask
		}
	case strings.HasPrefix(ptr, "/env/"), strings.HasPrefix(ptr, "/config/"), strings.HasPrefix(ptr, "/plugin/config/"):
		if diag.SecretName.MatchString(key) {
			return diag.Mask
		}
	}
	if strings.HasPrefix(ptr, "/command/") {
		return diag.MaskArg("", val)
	}
	return diag.MaskURLs(val)
}

// fieldName is how a person finds the value at ptr in a config file:
// "url", "headers/Authorization", "args/2" (the command's third word).
func fieldName(ptr string) string {
	if rest, ok := strings.CutPrefix(ptr, "/command/"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n > 0 {
			return "args/" + strconv.Itoa(n-1)
		}
		return "command"
	}
	return strings.TrimPrefix(ptr, "/")
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
	list := make([]string, 0, len(where))
	for p := range where {
		list = append(list, p)
	}
	sort.Strings(list)
	c.warns = append(c.warns, Warning{Message: fmt.Sprintf("credentials written in the config file are masked (%s): move each into a sensitive variable or ${NAME} reference so it is never printed; --show-secrets prints them as they are",
		strings.Join(list, ", "))})
}
