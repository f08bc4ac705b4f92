package option

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

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
