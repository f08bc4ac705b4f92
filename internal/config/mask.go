package config

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Masking literal credentials in what config show and compile print: a
// secret written into a config file should move to a variable, and
// printing it where a person (or their terminal's scrollback, or a CI
// log) reads it makes matters worse. Values from variables, env() and
// ${NAME} are never printed anyway: they are written as references.

const mask = "***"

// secretName is an env, header, query parameter or config key whose value
// is a credential. "auth" counts only as a word of its own (X-Auth-Token,
// AUTH_HEADER), so AUTHOR and OAUTH_CLIENT_ID are not taken for secrets.
var secretName = regexp.MustCompile(`(?i)(token|secret|passw|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|(^|[_.-])auth($|[_.-])|cookie|session[_-]?(id|key)|signature|^key$|^sig$|^code$)`)

// oauthSecrets are the OAuth settings that hold credentials.
var oauthSecrets = map[string]bool{"client_secret": true, "private_key": true, "id_token": true, "idp_client_secret": true}

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
				return scheme + " " + mask
			}
			return mask
		}
		if secretName.MatchString(key) {
			return mask
		}
	case strings.HasPrefix(ptr, "/oauth/"):
		if oauthSecrets[key] {
			return mask
		}
	case strings.HasPrefix(ptr, "/env/"), strings.HasPrefix(ptr, "/config/"), strings.HasPrefix(ptr, "/plugin/config/"):
		if secretName.MatchString(key) {
			return mask
		}
	}
	if strings.HasPrefix(ptr, "/command/") {
		return maskArg("", val)
	}
	return maskURLs(val)
}

// secretFlag reports whether name (a command-line flag, "--token", or
// the name of a NAME=value word) names a credential. Flags that say where
// a credential is kept (--token-file, --password-env, --auth-url) do not.
func secretFlag(name string) bool {
	name = strings.TrimLeft(name, "-")
	if name == "" || !secretName.MatchString(name) {
		return false
	}
	lower := strings.ToLower(name)
	for _, where := range []string{"file", "path", "dir", "env", "var", "url", "uri"} {
		if strings.HasSuffix(lower, where) {
			return false
		}
	}
	return true
}

// maskArg masks a command's argument given the one before it: the value
// of a credential flag ("--token abc", "--api-key=abc"), of a NAME=value
// word naming one ("-e GITHUB_TOKEN=ghp_..." of docker run), and the
// credentials of URLs in it.
func maskArg(prev, arg string) string {
	if arg == "" {
		return arg
	}
	if strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && secretFlag(prev) && !strings.HasPrefix(arg, "-") {
		return mask
	}
	if name, val, ok := strings.Cut(arg, "="); ok && val != "" && secretFlag(name) {
		return name + "=" + mask
	}
	return maskURLs(arg)
}

// MaskCommand is a command line as it may be shown: the credentials in its
// arguments masked (see maskArg). cmd is not changed.
func MaskCommand(cmd []string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		prev := ""
		if i > 0 {
			prev = cmd[i-1]
		}
		out[i] = maskArg(prev, a)
	}
	return out
}

// MaskURL is a URL as it may be shown: its password (or a user name
// standing alone, usually a token) and credential query values masked.
func MaskURL(u string) string { return maskURLs(u) }

// urlInText finds URLs inside a longer value ("--db=postgres://u:p@h/db").
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// maskURLs masks the credentials of every URL in s.
func maskURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, maskURL)
}

// maskURL masks a URL's userinfo (the password, or a user name standing
// alone, which is usually a token: https://TOKEN@host) and the values of
// credential-like query parameters. The rest is left as written.
func maskURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		user, _, hasPass := strings.Cut(authority[:at], ":")
		if hasPass {
			authority = user + ":" + mask + authority[at:]
		} else {
			authority = mask + authority[at:]
		}
	}
	path, query, hasQuery := strings.Cut(tail, "?")
	if hasQuery {
		query, frag, hasFrag := strings.Cut(query, "#")
		params := strings.Split(query, "&")
		for i, p := range params {
			k, _, hasValue := strings.Cut(p, "=")
			name, err := url.QueryUnescape(k)
			if err != nil {
				name = k
			}
			if hasValue && secretName.MatchString(name) {
				params[i] = k + "=" + mask
			}
		}
		tail = path + "?" + strings.Join(params, "&")
		if hasFrag {
			tail += "#" + frag
		}
	}
	return scheme + "://" + authority + tail
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

// MaskValue is a value as an audit log may keep it: masked when its key
// names a credential (token, password, api_key, ...), and with the
// passwords of URLs in it masked otherwise.
func MaskValue(key, val string) string {
	if secretName.MatchString(key) {
		return mask
	}
	return maskURLs(val)
}
