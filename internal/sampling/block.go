package sampling

import (
	"fmt"
	"net/url"
	"time"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Block is the config's sampling block: the model that answers servers'
// sampling requests, an OpenAI-compatible chat-completions endpoint, which
// covers local servers (Ollama, vLLM, llama.cpp) and hosted ones. Without
// it a person types the reply at the terminal.
type Block struct {
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
	Refs      map[string]option.Template // "/api_key" when it came from a variable
}

// Defaults of a sampling block.
const (
	DefaultMaxTokens = 1024
	DefaultPerMinute = 10
	DefaultTimeout   = 60 * time.Second
)

// ConfigBlock is the config's sampling block, in nexus.hcl and JSON
// alike: the config loader decodes and writes it through its options.
var ConfigBlock = option.Block[Block]{
	Name:    "sampling",
	Options: blockOptions,
	New: func() *Block {
		return &Block{MaxTokens: DefaultMaxTokens, PerMinute: DefaultPerMinute, Timeout: DefaultTimeout, Confirm: true}
	},
	HCLExample: `sampling {
  url     = "http://127.0.0.1:11434/v1"   # Ollama; any OpenAI-compatible endpoint
  model   = "llama3.1"
  servers = ["testserver"]
}`,
	JSONExample: `{"url": "http://127.0.0.1:11434/v1", "model": "llama3.1", "servers": ["testserver"]}`,
}

var blockOptions = option.Table[Block]{
	{HCL: "url", JSON: "url", Required: true, Example: `"http://127.0.0.1:11434/v1"`,
		Decode: func(b *Block, v option.Value) {
			var ok bool
			if b.URL, ok = v.String(""); ok {
				if bad := checkURL(b.URL); bad != "" {
					v.FailExample(bad)
				}
			}
		},
		Out: func(b *Block, _ option.Writer) any { return b.URL }},
	{HCL: "model", JSON: "model", Required: true, Example: `"llama3.1"`,
		Decode: func(b *Block, v option.Value) {
			var ok bool
			if b.Model, ok = v.String(""); ok && b.Model == "" {
				v.FailExample("model is empty: name the model the endpoint serves")
			}
		},
		Out: func(b *Block, _ option.Writer) any { return b.Model }},
	{HCL: "api_key", JSON: "api_key", Example: `"sk-test"`,
		Decode: func(b *Block, v option.Value) { b.APIKey, _ = v.String("/api_key") },
		Out: func(b *Block, w option.Writer) any {
			if b.APIKey == "" && b.Refs["/api_key"] == nil {
				return nil
			}
			return w.String("/api_key", b.APIKey)
		}},
	{HCL: "servers", JSON: "servers", Required: true, Example: `["testserver", "gh*"]`,
		Decode: func(b *Block, v option.Value) {
			var ok bool
			if b.Servers, ok = v.Strings(""); ok && len(b.Servers) == 0 {
				v.FailExample("servers is empty, so no server may sample: list the servers (globs) that may")
			}
		},
		Out: func(b *Block, _ option.Writer) any { return b.Servers }},
	{HCL: "max_tokens", JSON: "max_tokens", Example: `256`,
		Decode: func(b *Block, v option.Value) { b.MaxTokens, _ = v.Int(1) },
		Out:    func(b *Block, _ option.Writer) any { return unless(b.MaxTokens, DefaultMaxTokens) }},
	{HCL: "per_minute", JSON: "per_minute", Example: `3`,
		Decode: func(b *Block, v option.Value) { b.PerMinute, _ = v.Int(1) },
		Out:    func(b *Block, _ option.Writer) any { return unless(b.PerMinute, DefaultPerMinute) }},
	{HCL: "timeout", JSON: "timeout", Example: `"2m0s"`,
		Decode: func(b *Block, v option.Value) { b.Timeout, _ = v.Duration() },
		Out: func(b *Block, _ option.Writer) any {
			if b.Timeout == DefaultTimeout {
				return nil
			}
			return b.Timeout.String()
		}},
	{HCL: "confirm", JSON: "confirm", Example: `false`,
		Decode: func(b *Block, v option.Value) { b.Confirm, _ = v.Bool() },
		Out: func(b *Block, _ option.Writer) any {
			if b.Confirm {
				return nil
			}
			return false
		}},
}

// unless is n, or nil (left out) when it is the default.
func unless(n, def int) any {
	if n == def {
		return nil
	}
	return n
}

// checkURL says what is wrong with an endpoint URL, or "".
func checkURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("url %q is not an http(s) URL", s)
	}
	if u.User != nil {
		c := *u
		c.User = nil
		return fmt.Sprintf("url %q holds credentials; put the key in api_key (from a sensitive variable)", c.String())
	}
	return ""
}
