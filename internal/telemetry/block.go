package telemetry

import (
	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// Block is the telemetry block of a config: where traces go. The standard
// OTEL_* variables say the same and more (headers, timeouts, TLS); the
// block's settings win over them.
type Block struct {
	Endpoint    string // the OTLP receiver: "http://127.0.0.1:4318" (http/protobuf) or "http://127.0.0.1:4317" (grpc)
	Protocol    string // "http/protobuf" (default) or "grpc"
	ServiceName string // default "nexus"
	// LinkSpans makes each link of the chain a child span of the
	// request's span; false (the default) records each as an event on it:
	// one span per traced call.
	LinkSpans bool
	Source    diag.Source
}

// Protocols are the OTLP protocols the exporter speaks.
var Protocols = []string{"http/protobuf", "grpc"}

// ConfigBlock is the config's telemetry block, in nexus.hcl and JSON
// alike: the config loader decodes and writes it through its options.
var ConfigBlock = option.Block[Block]{
	Name:        "telemetry",
	Options:     blockOptions,
	New:         func() *Block { return &Block{} },
	HCLExample:  "telemetry {\n  endpoint = \"http://127.0.0.1:4318\"\n}",
	JSONExample: `{"endpoint": "http://127.0.0.1:4318"}`,
}

var blockOptions = option.Table[Block]{
	{HCL: "endpoint", JSON: "endpoint", Example: `"http://127.0.0.1:4318"`,
		// Plain http is allowed anywhere: collectors inside a cluster
		// commonly speak it, and spans carry names and decisions, not
		// arguments.
		Decode: func(b *Block, v option.Value) {
			var ok bool
			if b.Endpoint, ok = v.String(""); ok {
				if p := option.CheckURL("endpoint", b.Endpoint, false); p != "" {
					v.Fail(p, "Use the collector's OTLP URL: http://127.0.0.1:4318 (http/protobuf) or http://127.0.0.1:4317 (grpc).")
				}
			}
		},
		Out: func(b *Block, _ option.Writer) any { return text(b.Endpoint) }},
	{HCL: "protocol", JSON: "protocol", Example: `"grpc"`,
		Decode: func(b *Block, v option.Value) { b.Protocol, _ = v.Choice(Protocols) },
		Out:    func(b *Block, _ option.Writer) any { return text(b.Protocol) }},
	{HCL: "service_name", JSON: "service_name", Example: `"nexus-ci"`,
		Decode: func(b *Block, v option.Value) { b.ServiceName, _ = v.String("") },
		Out:    func(b *Block, _ option.Writer) any { return text(b.ServiceName) }},
	{HCL: "link_spans", JSON: "link_spans", Example: `true`,
		Decode: func(b *Block, v option.Value) { b.LinkSpans, _ = v.Bool() },
		Out: func(b *Block, _ option.Writer) any {
			if b.LinkSpans {
				return true
			}
			return nil
		}},
}

// text is a string option's Out: left out when unset.
func text(s string) any {
	if s == "" {
		return nil
	}
	return s
}
