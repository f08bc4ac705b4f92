package option

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
)

// nameRE is what a server, plugin, filter, rule or agent may be called: a
// tool is addressed as server.tool, so no dots, and nothing a shell would
// split.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NameRule is the fix of a name CheckName refuses.
const NameRule = "Use 1 to 64 letters, digits, '_' or '-' (a tool is called as server.tool, so no dots)."

// CheckName says what is wrong with name as the name of a what
// ("filter"), or "".
func CheckName(what, name string) string {
	if nameRE.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%s name %q is not allowed", what, name)
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckSHA256 says what is wrong with a pinned SHA-256, or "".
func CheckSHA256(v string) string {
	if sha256RE.MatchString(v) {
		return ""
	}
	return fmt.Sprintf("sha256 must be 64 lower-case hex digits (the output of sha256sum), not %q", v)
}

// CheckURL says what is wrong with s as an absolute http or https URL, or
// "": field names it in the message. With secure, plain http is allowed
// for loopback hosts only.
func CheckURL(field, s string, secure bool) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Sprintf("%s %q is not an absolute http or https URL", field, s)
	}
	if secure && u.Scheme == "http" && !Loopback(u.Hostname()) {
		return fmt.Sprintf("%s %q must use https (plain http is allowed for loopback hosts only)", field, s)
	}
	return ""
}

// Loopback says whether a URL's host is this machine: localhost or a
// loopback address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
