package diag

import (
	"net/url"
	"regexp"
	"strings"
)

// Masking credentials in what a person reads. A config may hold a URL with
// a password or an api_key parameter; every Report masks them where they
// appear (its URL, its problem, the quoted server errors in it), `nexus
// config show` and compile mask them in what they print, and the audit log
// in what it keeps. One set of rules, here.

// Mask replaces a credential.
const Mask = "***"

// SecretName matches an env, header, query parameter, flag or config key
// whose value is a credential. "auth" counts only as a word of its own
// (X-Auth-Token, AUTH_HEADER), so AUTHOR and OAUTH_CLIENT_ID are not taken
// for secrets.
var SecretName = regexp.MustCompile(`(?i)(token|secret|passw|pwd|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential|(^|[_.-])auth($|[_.-])|cookie|session[_-]?(id|key)|signature|^key$|^sig$|^code$)`)

// urlInText finds URLs inside a longer value ("--db=postgres://u:p@h/db").
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]+`)

// MaskURLs masks the credentials of every URL in s: a password (or a user
// name standing alone, usually a token: https://TOKEN@host) and the values
// of credential-like query parameters. The rest is left as written.
func MaskURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, func(u string) string {
		// Punctuation that ends a sentence after a URL is not part of it.
		core := strings.TrimRight(u, ".,;:!?)]}")
		return maskURL(core) + u[len(core):]
	})
}

// loginSchemes are the schemes whose user name alone is a login name.
var loginSchemes = map[string]bool{"ssh": true, "sftp": true, "git+ssh": true, "ssh+git": true}

// maskURL is MaskURLs for one URL.
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
		switch {
		case hasPass:
			authority = user + ":" + Mask + authority[at:]
		case loginSchemes[strings.ToLower(scheme)]:
			// ssh://git@host: a user name alone is a login there, not a
			// token.
		default:
			authority = Mask + authority[at:]
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
			if hasValue && secretQuery(name) {
				params[i] = k + "=" + Mask
			}
		}
		tail = path + "?" + strings.Join(params, "&")
		if hasFrag {
			tail += "#" + frag
		}
	}
	return scheme + "://" + authority + tail
}

// secretFlag reports whether name (a command-line flag, "--token", or
// the name of a NAME=value word) names a credential. Flags that say where
// a credential is kept (--token-file, --password-env, --auth-url) do not.
func secretFlag(name string) bool {
	name = strings.TrimLeft(name, "-")
	if name == "" || !SecretName.MatchString(name) {
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

// MaskArg masks a command's argument given the one before it: the value
// of a credential flag ("--token abc", "--api-key=abc"), of a NAME=value
// word naming one ("-e GITHUB_TOKEN=ghp_..." of docker run), and the
// credentials of URLs in it.
func MaskArg(prev, arg string) string {
	if arg == "" {
		return arg
	}
	if strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") && secretFlag(prev) && !strings.HasPrefix(arg, "-") {
		return Mask
	}
	if name, val, ok := strings.Cut(arg, "="); ok && val != "" && secretFlag(name) {
		return name + "=" + Mask
	}
	return MaskURLs(arg)
}

// MaskCommand is a command line as it may be shown: the credentials in its
// arguments masked (see MaskArg). cmd is not changed.
func MaskCommand(cmd []string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		prev := ""
		if i > 0 {
			prev = cmd[i-1]
		}
		out[i] = MaskArg(prev, a)
	}
	return out
}

// secretQuery is a query parameter whose value may be a credential: a
// SecretName, or a name services use for keys and signatures in URLs
// (subscription-key, application_key, authkey, authorization,
// X-Amz-Signature, session). Plural and longer words (keys, author) are
// not taken.
func secretQuery(name string) bool {
	return SecretName.MatchString(name) || secretQueryName.MatchString(name)
}

var secretQueryName = regexp.MustCompile(`(?i)(key$|^auth(orization|key)?$|signature$|^session$|pass)`)
