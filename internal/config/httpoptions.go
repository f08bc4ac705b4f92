package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// httpOptions are the HTTP transport's options, each in one row: its name
// in a nexus.hcl http block and flat on a JSON server (with an http_
// prefix where the bare name would be unclear), how it is decoded (once,
// for both formats, through a setting), and how it is written back to
// nexus.hcl and to nexus JSON. An option is added here, on Server, and
// where the transport takes it (host's dial). The url, which also decides
// the transport, and legacy_sse, which is "type": "sse" in JSON, are
// decoded beside these.
var httpOptions = []option{
	{hcl: "headers", json: "headers",
		decode: func(s *Server, v setting) { s.Headers, _ = v.strMap("/headers") },
		hclOut: func(s *Server) string {
			if len(s.Headers) == 0 {
				return ""
			}
			return s.mapHCL("/headers", s.Headers)
		}},
	{hcl: "max_retries", json: "http_max_retries",
		decode: func(s *Server, v setting) {
			if n, ok := v.integer(0); ok {
				s.MaxRetries = &n
			}
		},
		hclOut: func(s *Server) string {
			if s.MaxRetries == nil {
				return ""
			}
			return fmt.Sprint(*s.MaxRetries)
		},
		jsonOut: func(s *Server) any {
			if s.MaxRetries == nil {
				return nil
			}
			return *s.MaxRetries
		}},
	{hcl: "retry_backoff", json: "http_retry_backoff",
		decode: func(s *Server, v setting) { s.RetryBackoff, _ = v.duration() },
		hclOut: func(s *Server) string {
			if s.RetryBackoff <= 0 {
				return ""
			}
			return hclString(s.RetryBackoff.String())
		},
		jsonOut: func(s *Server) any {
			if s.RetryBackoff <= 0 {
				return nil
			}
			return s.RetryBackoff.String()
		}},
	{hcl: "allow_private_networks", json: "http_allow_private_networks",
		decode: func(s *Server, v setting) { s.AllowPrivateNetworks, _ = v.boolean() },
		hclOut: func(s *Server) string {
			if !s.AllowPrivateNetworks {
				return ""
			}
			return "true"
		},
		jsonOut: func(s *Server) any {
			if !s.AllowPrivateNetworks {
				return nil
			}
			return true
		}},
}

// option is one transport option: see httpOptions. jsonOut is nil where
// compile writes the option itself for every format (headers).
type option struct {
	hcl, json string
	decode    func(s *Server, v setting)
	hclOut    func(s *Server) string // the HCL value, "" to leave it out
	jsonOut   func(s *Server) any    // the nexus JSON value, nil to leave it out
}

// setting is one option's value as a decoder found it, read with that
// decoder's own helpers, so its messages and positions are the format's.
type setting interface {
	strMap(ptr string) (map[string]string, bool)
	integer(lo int) (int, bool)
	duration() (time.Duration, bool)
	boolean() (bool, bool)
}

// hclSetting is an attribute of a nexus.hcl block.
type hclSetting struct {
	h    *hclFile
	a    *hcl.Attribute
	refs map[string]Template
}

func (v hclSetting) strMap(ptr string) (map[string]string, bool) { return v.h.strMap(v.a, v.refs, ptr) }
func (v hclSetting) integer(lo int) (int, bool)                  { return v.h.integer(v.a, lo) }
func (v hclSetting) duration() (time.Duration, bool)             { return v.h.duration(v.a) }
func (v hclSetting) boolean() (bool, bool)                       { return v.h.boolean(v.a) }

// jsonSetting is a member of a JSON server object.
type jsonSetting struct {
	d    *dec
	v    *jval
	name string
}

func (v jsonSetting) strMap(ptr string) (map[string]string, bool) {
	return v.d.strMap(v.v, v.name, ptr)
}
func (v jsonSetting) integer(lo int) (int, bool)      { return v.d.integer(v.v, v.name, lo) }
func (v jsonSetting) duration() (time.Duration, bool) { return v.d.duration(v.v, v.name) }
func (v jsonSetting) boolean() (bool, bool)           { return v.d.boolean(v.v, v.name) }

// httpOptionKeys are the options' names on a JSON server.
func httpOptionKeys() []string {
	keys := make([]string, len(httpOptions))
	for i, o := range httpOptions {
		keys[i] = o.json
	}
	return keys
}

// httpOptionJSON is the option a JSON server member names, if any.
func httpOptionJSON(name string) *option {
	for i := range httpOptions {
		if httpOptions[i].json == name {
			return &httpOptions[i]
		}
	}
	return nil
}

// httpOptionsHCL writes s's HTTP options as lines of an http block.
func httpOptionsHCL(s *Server) string {
	var b strings.Builder
	for _, o := range httpOptions {
		if v := o.hclOut(s); v != "" {
			fmt.Fprintf(&b, "    %s = %s\n", o.hcl, v)
		}
	}
	return b.String()
}
