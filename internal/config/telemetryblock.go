package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/nexus-mcp/nexus/internal/diag"
)

// Telemetry is the telemetry block: where traces go. The standard OTEL_*
// variables say the same and more (headers, timeouts, TLS); the block's
// settings win over them.
type Telemetry struct {
	Endpoint    string // the OTLP receiver: "http://127.0.0.1:4318" (http/protobuf) or "http://127.0.0.1:4317" (grpc)
	Protocol    string // "http/protobuf" (default) or "grpc"
	ServiceName string // default "nexus"
	// LinkSpans makes each link of the chain a child span of the
	// request's span; false (the default) records each as an event on it:
	// one span per traced call.
	LinkSpans bool
	Source    diag.Source
}

var (
	telemetrySchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "endpoint"}, {Name: "protocol"}, {Name: "service_name"}, {Name: "link_spans"}}}
	telemetryKeys   = []string{"endpoint", "protocol", "service_name", "link_spans"}
	protocols       = []string{"http/protobuf", "grpc"}
)

// checkEndpoint says what is wrong with an OTLP endpoint, or "". Plain
// http is allowed anywhere: collectors inside a cluster commonly speak it,
// and spans carry names and decisions, not arguments.
func checkEndpoint(s string) string { return checkHTTPURL("endpoint", s, false) }

// telemetry decodes a telemetry block.
func (h *hclFile) telemetry(b *hcl.Block) {
	c, ok := h.content(b, telemetrySchema)
	if !ok {
		return
	}
	t := &Telemetry{Source: h.blockSource(b)}
	before := len(h.errs)
	at := c.Attributes
	if a := at["endpoint"]; a != nil {
		if t.Endpoint, ok = h.str(a, nil, ""); ok {
			if p := checkEndpoint(t.Endpoint); p != "" {
				h.errRange(a.Expr.Range(), "", p, `Use the collector's OTLP URL, for example endpoint = "http://127.0.0.1:4318".`)
			}
		}
	}
	if a := at["protocol"]; a != nil {
		if t.Protocol, ok = h.str(a, nil, ""); ok {
			if p := oneOf("protocol", t.Protocol, protocols); p != "" {
				h.errRange(a.Expr.Range(), "", p)
			}
		}
	}
	if a := at["service_name"]; a != nil {
		t.ServiceName, _ = h.str(a, nil, "")
	}
	if a := at["link_spans"]; a != nil {
		t.LinkSpans, _ = h.boolean(a)
	}
	if len(h.errs) == before {
		h.out.telemetry = t
	}
}

// telemetry decodes the "telemetry" object of a JSON file.
func (j *jsonFile) telemetry(v *jval) {
	d := &dec{j: j, what: "telemetry"}
	if v.kind != '{' {
		d.typeErr(v, "telemetry", "an object", `{"endpoint": "http://127.0.0.1:4318"}`)
		return
	}
	if !d.keys(v, "telemetry", telemetryKeys) {
		return
	}
	t := &Telemetry{Source: j.at(v.off)}
	before := len(j.errs)
	for _, m := range v.obj {
		if m.key == "link_spans" {
			t.LinkSpans, _ = d.boolean(m.val, m.key)
			continue
		}
		s, ok := d.str(m.val, m.key, "")
		if !ok {
			continue
		}
		switch m.key {
		case "endpoint":
			if p := checkEndpoint(s); p != "" {
				d.errAt(m.val, p)
			}
			t.Endpoint = s
		case "protocol":
			if p := oneOf("protocol", s, protocols); p != "" {
				d.errAt(m.val, p)
			}
			t.Protocol = s
		case "service_name":
			t.ServiceName = s
		}
	}
	if len(j.errs) == before {
		j.out.telemetry = t
	}
}
