package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"

	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

// MaxBody bounds every OAuth response this package reads.
const MaxBody = 1 << 20

// NewHTTPClient is the client used for OAuth calls when Config.HTTPClient is
// nil. It
//   - times out each call after 30 s (and dials after 10 s);
//   - follows at most 3 redirects, and only within the same origin: a
//     redirect elsewhere is an error naming its Location;
//   - checks every address it connects to after DNS resolution, so that
//     rebinding cannot get past it: link-local and cloud metadata
//     addresses, unspecified and multicast addresses are refused, and so
//     are private ranges unless allowPrivate; loopback is allowed;
//   - verifies TLS (1.2 or later) always;
//   - ignores HTTP(S)_PROXY, which would take the connection past the
//     address check.
//
// Bodies are capped at MaxBody by the readers in this package.
func NewHTTPClient(allowPrivate bool) *http.Client {
	d := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			return checkDialAddr(address, allowPrivate)
		},
	}
	tr := &http.Transport{
		// No proxy from the environment: the guard would see only the
		// proxy's address, never the one the request goes to.
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  30 * time.Second,
		MaxIdleConns:           10,
		IdleConnTimeout:        60 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       30 * time.Second,
		CheckRedirect: sameOriginRedirects,
	}
}

// sameOriginRedirects allows at most 3 redirects, each to the origin of the
// original request.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 3 {
		return fmt.Errorf("stopped after 3 redirects (last to %s)", redactURL(req.URL.String()))
	}
	first := via[0].URL
	if !strings.EqualFold(req.URL.Scheme, first.Scheme) || !strings.EqualFold(req.URL.Host, first.Host) {
		return fmt.Errorf("refusing to follow a redirect from %s to another origin: %s", origin(first), redactURL(req.URL.String()))
	}
	return nil
}

// checkDialAddr decides whether a resolved address may be connected to.
// It is the dialer's Control hook: it runs after resolution and before any
// packet is sent. The decision is the transport's (httptransport.CheckAddr),
// so OAuth calls and MCP connections are guarded alike.
func checkDialAddr(address string, allowPrivate bool) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("refusing to connect to %q: not an IP address", host)
	}
	if err := httptransport.CheckAddr(ip, allowPrivate); err != nil {
		var b *httptransport.BlockedAddressError
		if errors.As(err, &b) {
			fix := " (set allow_private_networks to allow it)"
			if b.Always {
				fix = " (never allowed: it would expose cloud credentials)"
			}
			return fmt.Errorf("refusing to connect to %s: %s%s", b.IP, b.Reason, fix)
		}
		return err
	}
	return nil
}

// readLimited reads at most MaxBody bytes of r, failing when there is more.
func readLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxBody+1))
	if err != nil {
		return b, err
	}
	if len(b) > MaxBody {
		return b[:MaxBody], fmt.Errorf("response body exceeds %d bytes", MaxBody)
	}
	return b, nil
}

// httpError is a non-2xx response to a metadata or registration call.
type httpError struct {
	Status int
	Body   []byte
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d", e.Status) }

// oauthErrorBody is the error response of RFC 6749 section 5.2 / RFC 7591.
type oauthErrorBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// getJSON fetches url and decodes a JSON object into v. A non-2xx status is
// an *httpError; a body that is not JSON is an error quoting its start.
func (c *Client) getJSON(ctx context.Context, rawURL string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", protocolVersion)
	return c.doJSON(req, v)
}

// protocolVersion is sent on metadata requests, as the MCP spec asks of
// clients that make them.
const protocolVersion = "2025-11-25"

func (c *Client) postJSON(ctx context.Context, rawURL string, body any, v any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	return c.doJSON(req, v)
}

func (c *Client) doJSON(req *http.Request, v any) error {
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := readLimited(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &httpError{Status: resp.StatusCode, Body: body}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "text/html" {
			return fmt.Errorf("expected JSON, got %s: %s", mt, excerpt(body))
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("invalid JSON (%v): %s", err, excerpt(body))
	}
	return nil
}
