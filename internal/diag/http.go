package diag

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// bodyLines bounds the response body shown in an HTTP report: enough to
// read an error page's message, not a whole HTML document.
const (
	bodyLines = 10
	bodyBytes = 512
)

// HTTPStatus reports an HTTP error status from a server's endpoint. method
// is the HTTP method (POST, GET, DELETE), rawURL the URL as requested (with
// secrets already masked by the caller; c.URL is used when it is ""), body
// an excerpt of the response body (only its start is shown) and retryAfter
// the Retry-After header, if any.
//
// The status decides the likely causes: 401 and 403 are about credentials,
// 404 and 405 about the URL or the transport type, 429 and 5xx about the
// server's state.
func HTTPStatus(c Context, method, rawURL string, status int, body, retryAfter string, cause error) *Report {
	r := c.report("MCP HTTP Error")
	r.Cause = cause
	if r.URL == "" {
		r.URL = rawURL
	}
	if rawURL == "" {
		rawURL = c.URL
	}
	text := http.StatusText(status)
	problem := "HTTP " + strconv.Itoa(status)
	if text != "" {
		problem += " " + text
	}
	switch {
	case method != "" && rawURL != "":
		r.Problem = method + " " + rawURL + " returned " + problem
	case rawURL != "":
		r.Problem = rawURL + " returned " + problem
	default:
		r.Problem = "The server returned " + problem
	}
	if lines := bodyExcerpt(body); len(lines) > 0 {
		r.Details = append(r.Details, Section{Heading: "Response body (start)", Lines: lines})
	}
	if retryAfter != "" {
		r.Details = append(r.Details, Section{Heading: "Retry-After", Lines: []string{retryAfter}})
	}

	host := hostOf(rawURL)
	curl := ""
	if rawURL != "" {
		curl = TryByHand(rawURL)
	}
	switch {
	case status == http.StatusUnauthorized:
		r.Causes = []string{
			"The server needs credentials and none were sent",
			"The token that was sent has expired or was revoked",
		}
		r.Fix = []string{
			"Log in with OAuth when the server supports it: nexus auth login " + c.Server,
			"Or send a token in this server's entry" + c.inFile() + ":\n" + c.tokenHeader(),
		}
	case status == http.StatusForbidden:
		r.Causes = []string{
			"The credentials are valid but lack access to this server or tool (a missing scope)",
			"The server refused the request's origin or network",
		}
		r.Fix = []string{
			"Check the account's permissions and scopes with the provider of " + orHost(host, "the server"),
			"Log in again to get a token with the required scopes: nexus auth login " + c.Server,
		}
	case status == http.StatusNotFound:
		r.Causes = []string{
			"The URL is not the server's MCP endpoint (check the path, often /mcp)",
			"The server ended the session (an expired Mcp-Session-Id); reconnecting starts a new one",
		}
		r.Fix = []string{"Check " + c.key("url", "") + c.inFile()}
		if curl != "" {
			r.Fix = append(r.Fix, curl)
		}
	case status == http.StatusMethodNotAllowed:
		r.Causes = []string{
			"The endpoint does not speak streamable HTTP (an older server may use HTTP+SSE)",
			"The URL is not the server's MCP endpoint",
		}
		r.Fix = []string{
			"For a server that only offers the older HTTP+SSE transport, set " + c.sse() + c.inFile(),
			"Check " + c.key("url", "") + c.inFile(),
		}
	case status == http.StatusBadRequest:
		r.Causes = []string{
			"The server does not accept this MCP protocol version or a header Nexus sent",
			"The URL is not an MCP endpoint, so the request means nothing to it",
		}
		r.Fix = []string{"The response body above usually says what the server objected to"}
		if curl != "" {
			r.Fix = append(r.Fix, curl)
		}
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		r.Causes = []string{"The server is rate limiting or overloaded"}
		r.Fix = []string{"Wait and try again (see Retry-After when it is given)"}
	case status >= 500:
		r.Causes = []string{
			"The server failed while handling the request (a bug or an outage)",
			"A proxy or gateway in front of the server could not reach it",
		}
		r.Fix = []string{
			"Try again later; if it persists, check the server's logs or status page",
		}
	default:
		r.Causes = []string{"The server refused the request"}
		r.Fix = []string{"The response body above usually says why"}
	}
	return r
}

// bodyExcerpt is the start of a response body, at most bodyLines lines
// and bodyBytes bytes, blank lines dropped.
func bodyExcerpt(body string) []string {
	cut := false
	if len(body) > bodyBytes {
		body = body[:bodyBytes]
		for len(body) > 0 && body[len(body)-1]&0xc0 == 0x80 { // do not split a rune
			body = body[:len(body)-1]
		}
		if len(body) > 0 && body[len(body)-1] >= 0xc0 {
			body = body[:len(body)-1]
		}
		cut = true
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(lines) == bodyLines {
			cut = true
			break
		}
		lines = append(lines, strings.TrimRight(l, " \t"))
	}
	if cut && len(lines) > 0 {
		lines[len(lines)-1] += " …"
	}
	return lines
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

func orHost(host, otherwise string) string {
	if host == "" {
		return otherwise
	}
	return host
}

// tokenHeader is a header setting that sends a token kept out of the file.
func (c Context) tokenHeader() string {
	if c.hcl() {
		return "headers = { Authorization = \"Bearer ${var.token}\" }  # in the http block, with variable \"token\" { sensitive = true }"
	}
	return `"headers": {"Authorization": "Bearer ${input:token}"}`
}

// sse is the setting that selects the legacy HTTP+SSE transport.
func (c Context) sse() string {
	if c.hcl() {
		return "legacy_sse = true (in the http block)"
	}
	return `"type": "sse"`
}
