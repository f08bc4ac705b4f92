// Package telemetry is Nexus's traces and metrics: what the chain decided,
// seen from the tools a platform team already runs.
//
// Traces use the OpenTelemetry Go SDK and its OTLP exporters (HTTP or
// gRPC), configured by the standard OTEL_* variables or Options. A traced
// request is one span, named and described after the OpenTelemetry
// semantic conventions for MCP ("tools/call get_issue"; mcp.method.name,
// mcp.session.id, mcp.protocol.version, jsonrpc.request.id,
// network.transport, error.type, gen_ai.tool.name, ...), with what they
// have no name for (the chain's decision, the upstream server) under
// nexus.*. Each link of the chain is an event on that span (its name,
// decision and duration) by default, or a child span of its own with
// Options.LinkSpans: one span per traced call unless asked for more.
//
// Trace context travels in _meta in both eras, as the 2026-07-28 revision
// reserves it (SEP-414): traceparent, tracestate and baggage (Keys) in a
// request's _meta are continued, within the W3C limits (Fits; anything
// malformed or oversized is ignored, never an error), and ctx's are
// written into the _meta of what goes upstream. With no exporter
// configured no span is made and a request pays a nil check.
//
// Metrics use prometheus/client_golang in a registry of their own:
// requests by method, server, tool and decision; each link's time; links
// that failed; upstream sessions up and restarted; downstream sessions;
// audit records dropped. Handler serves them (nexus serve --metrics).
//
// The config's telemetry block (Block) is this package's: its options are
// ConfigBlock, through which the config loader decodes the block.
package telemetry
