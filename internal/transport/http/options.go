package httptransport

import (
	"time"

	"github.com/nexus-mcp/nexus/internal/option"
)

// Options are the transport's settings a config gives: the http block of a
// nexus.hcl server, or flat members of a JSON server entry. OptionTable
// decodes and writes them; the url, which also chooses the transport, and
// legacy_sse ("type": "sse" in JSON) are read by the config loader beside
// them.
type Options struct {
	// Headers are sent on every request, already ${VAR}-expanded. Their
	// values are never logged or put into errors: they usually hold
	// credentials. The transport's own headers (Accept, Content-Type,
	// Mcp-Session-Id, MCP-Protocol-Version, Last-Event-ID) win over them.
	Headers map[string]string

	// MaxRetries is how often a request is retried after a connection
	// failure before anything was sent, or after HTTP 429, 502, 503 or 504:
	// nil for the default (DefaultMaxRetries), 0 for none. RetryBackoff is
	// the first wait (default 1 s); it doubles per attempt, with jitter, up
	// to MaxRetryDelay.
	MaxRetries   *int
	RetryBackoff time.Duration

	// AllowPrivateNetworks lets the transport connect to private,
	// link-local, CGNAT, multicast and unspecified addresses. Loopback is
	// always allowed; cloud metadata addresses never are.
	AllowPrivateNetworks bool
}

// OptionTable is every option of Options, in the order nexus.hcl writes
// them. To add one: a field above, a row here, its use in the transport.
var OptionTable = option.Table[Options]{
	headersOption(),
	{HCL: "max_retries", JSON: "http_max_retries", Example: `5`,
		Decode: func(o *Options, v option.Value) {
			if n, ok := v.Int(0); ok {
				o.MaxRetries = &n
			}
		},
		Out: func(o *Options, _ option.Writer) any {
			if o.MaxRetries == nil {
				return nil
			}
			return *o.MaxRetries
		},
		Lost: lostRetries},
	{HCL: "retry_backoff", JSON: "http_retry_backoff", Example: `"2s"`,
		Decode: func(o *Options, v option.Value) { o.RetryBackoff, _ = v.Duration() },
		Out: func(o *Options, _ option.Writer) any {
			if o.RetryBackoff <= 0 {
				return nil
			}
			return o.RetryBackoff.String()
		},
		Lost: lostRetries},
	{HCL: "allow_private_networks", JSON: "http_allow_private_networks", Example: `true`,
		Decode: func(o *Options, v option.Value) { o.AllowPrivateNetworks, _ = v.Bool() },
		Out: func(o *Options, _ option.Writer) any {
			if !o.AllowPrivateNetworks {
				return nil
			}
			return true
		},
		Lost: func(o *Options, format string) string {
			if !o.AllowPrivateNetworks {
				return ""
			}
			return "allow_private_networks cannot be expressed in " + format
		}},
}

// lostRetries is the one warning for both retry options.
func lostRetries(o *Options, format string) string {
	if o.MaxRetries == nil && o.RetryBackoff <= 0 {
		return ""
	}
	return "retries cannot be expressed in " + format
}

// headersOption is the headers row, checked at load as Dial checks them.
func headersOption() option.Option[Options] {
	o := option.Map("headers", "/headers", func(o *Options) *map[string]string { return &o.Headers }, `{"X-Team": "blue"}`)
	decode := o.Decode
	o.Decode = func(opts *Options, v option.Value) {
		decode(opts, v)
		if p := checkHeaders(opts.Headers); p != "" {
			v.Fail(p, "Header names are letters, digits and -; a value is one line.")
		}
	}
	return o
}
