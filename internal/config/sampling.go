package config

import (
	"fmt"
	"net/url"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Sampling is the model that answers servers' sampling requests (a
// sampling block): an OpenAI-compatible chat-completions endpoint, which
// covers local servers (Ollama, vLLM, llama.cpp) and hosted ones. Without
// it a person types the reply at the terminal.
type Sampling struct {
	URL       string   // the endpoint's base URL (…/v1) or its chat/completions URL
	Model     string   // the model name the endpoint knows
	APIKey    string   // sent as a bearer token; "" sends none
	Servers   []string // globs of the servers that may sample; none may unless listed
	MaxTokens int      // cap on a request's maxTokens (default 1024)
	PerMinute int      // requests per server per minute (default 10)
	Timeout   time.Duration
	// Confirm: a person confirms each request at the terminal (the
	// default); false lets the model answer unattended.
	Confirm bool

	Source    diag.Source
	Overrides []diag.Source
	Refs      map[string]Template // "/api_key" when it came from a variable
}

// Defaults of a sampling block.
const (
	DefaultSamplingMaxTokens = 1024
	DefaultSamplingPerMinute = 10
	DefaultSamplingTimeout   = 60 * time.Second
)

var (
	samplingSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "url", Required: true}, {Name: "model", Required: true}, {Name: "api_key"}, {Name: "servers", Required: true},
		{Name: "max_tokens"}, {Name: "per_minute"}, {Name: "timeout"}, {Name: "confirm"},
	}}
	samplingKeys    = []string{"url", "model", "api_key", "servers", "max_tokens", "per_minute", "timeout", "confirm"}
	samplingExample = `sampling {
  url     = "http://127.0.0.1:11434/v1"   # Ollama; any OpenAI-compatible endpoint
  model   = "llama3.1"
  servers = ["testserver"]
}`
)

func newSampling(src diag.Source) *Sampling {
	return &Sampling{MaxTokens: DefaultSamplingMaxTokens, PerMinute: DefaultSamplingPerMinute, Timeout: DefaultSamplingTimeout, Confirm: true, Source: src}
}

// checkSamplingURL says what is wrong with an endpoint URL, or "".
func checkSamplingURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("url %q is not an http(s) URL", s)
	}
	if u.User != nil {
		return fmt.Sprintf("url %q holds credentials; put the key in api_key (from a sensitive variable)", redactUserinfo(u))
	}
	return ""
}

func redactUserinfo(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// sampling decodes a sampling block.
func (h *hclFile) sampling(b *hcl.Block) {
	if h.out.sampling != nil {
		h.errRange(b.DefRange, "", "a file has at most one sampling block", samplingExample)
		return
	}
	c, ok := h.content(b, samplingSchema)
	if !ok {
		return
	}
	s := newSampling(h.blockSource(b))
	before := len(h.errs)
	at := c.Attributes
	if a := at["url"]; a != nil {
		if s.URL, ok = h.str(a, nil, ""); ok {
			if bad := checkSamplingURL(s.URL); bad != "" {
				h.errRange(a.Expr.Range(), "", bad, samplingExample)
			}
		}
	}
	if a := at["model"]; a != nil {
		if s.Model, ok = h.str(a, nil, ""); ok && s.Model == "" {
			h.errRange(a.Expr.Range(), "", "model is empty: name the model the endpoint serves", samplingExample)
		}
	}
	if a := at["api_key"]; a != nil {
		refs := map[string]Template{}
		if s.APIKey, _ = h.str(a, refs, "/api_key"); len(refs) > 0 {
			s.Refs = refs
		}
	}
	if a := at["servers"]; a != nil {
		if s.Servers, ok = h.strs(a, nil, ""); ok && len(s.Servers) == 0 {
			h.errRange(a.Expr.Range(), "", "servers is empty, so no server may sample: list the servers (globs) that may", samplingExample)
		}
	}
	if a := at["max_tokens"]; a != nil {
		s.MaxTokens, _ = h.integer(a, 1)
	}
	if a := at["per_minute"]; a != nil {
		s.PerMinute, _ = h.integer(a, 1)
	}
	if a := at["timeout"]; a != nil {
		s.Timeout, _ = h.duration(a)
	}
	if a := at["confirm"]; a != nil {
		s.Confirm, _ = h.boolean(a)
	}
	if len(h.errs) == before {
		h.out.sampling = s
	}
}

// sampling decodes the "sampling" object of a JSON file.
func (j *jsonFile) sampling(v *jval) {
	d := &dec{j: j, what: "sampling"}
	if v.kind != '{' {
		d.typeErr(v, "sampling", "an object", `{"url": "http://127.0.0.1:11434/v1", "model": "llama3.1", "servers": ["testserver"]}`)
		return
	}
	if !d.keys(v, "sampling", samplingKeys) {
		return
	}
	s := newSampling(j.at(v.off))
	before := len(j.errs)
	for _, m := range v.obj {
		val := m.val
		switch m.key {
		case "url":
			if u, ok := d.str(val, m.key, ""); ok {
				if bad := checkSamplingURL(u); bad != "" {
					d.errAt(val, bad)
				}
				s.URL = u
			}
		case "model":
			s.Model, _ = d.str(val, m.key, "")
		case "api_key":
			s.APIKey, _ = d.str(val, m.key, "/api_key")
			s.Refs = d.refs
		case "servers":
			s.Servers, _ = d.strs(val, m.key, "")
		case "max_tokens":
			s.MaxTokens, _ = d.integer(val, m.key, 1)
		case "per_minute":
			s.PerMinute, _ = d.integer(val, m.key, 1)
		case "timeout":
			s.Timeout, _ = d.duration(val, m.key)
		case "confirm":
			s.Confirm, _ = d.boolean(val, m.key)
		}
	}
	for _, k := range []string{"url", "model", "servers"} {
		if v.get(k) == nil {
			d.errAt(v, fmt.Sprintf("sampling needs %q", k), `{"url": "http://127.0.0.1:11434/v1", "model": "llama3.1", "servers": ["testserver"]}`)
		}
	}
	if len(j.errs) == before {
		j.out.sampling = s
	}
}

// samplingJSON is a sampling block as nexus-json writes it.
func (c *compiler) samplingJSON(s *Sampling) map[string]any {
	e := map[string]any{"url": s.URL, "model": s.Model, "servers": s.Servers}
	if s.APIKey != "" || s.Refs["/api_key"] != nil {
		e["api_key"] = c.str(s.Refs, "/api_key", s.APIKey)
	}
	if s.MaxTokens != DefaultSamplingMaxTokens {
		e["max_tokens"] = s.MaxTokens
	}
	if s.PerMinute != DefaultSamplingPerMinute {
		e["per_minute"] = s.PerMinute
	}
	if s.Timeout != DefaultSamplingTimeout {
		e["timeout"] = s.Timeout.String()
	}
	if !s.Confirm {
		e["confirm"] = false
	}
	return e
}
