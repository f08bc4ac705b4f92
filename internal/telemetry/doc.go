// Package telemetry is Nexus's traces and metrics: what the chain decided,
// seen from the tools a platform team already runs.
//
// Traces use the OpenTelemetry Go SDK and its OTLP exporters (HTTP or
// gRPC), configured by the standard OTEL_* variables or Options: one span
// per request (named for the method and the tool, with the semantic
// conventions' mcp.* and gen_ai.* attributes), a child span per link of
// the chain with the link's own times and decision, a W3C traceparent in
// the request's _meta continued, and the request's context passed on to
// the upstream server in its _meta. With no exporter configured no span is
// made and a request pays a nil check.
//
// Metrics use prometheus/client_golang in a registry of their own:
// requests by method, server, tool and decision; each link's time; links
// that failed; upstream sessions up and restarted; downstream sessions;
// audit records dropped. Handler serves them (nexus serve --metrics).
package telemetry
