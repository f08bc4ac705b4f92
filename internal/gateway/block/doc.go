// Package block is the config's gateway block (nexus serve): its
// listener, TLS, limits and OAuth, as an option table with nested tables
// (issue 39), and the checks each value needs alone. It sits under
// internal/gateway, which serves what it configures, but apart from it:
// internal/gateway imports internal/config, and config imports this
// package to decode the block, so the table cannot live in
// internal/gateway without a cycle. It imports no other part of the host.
//
// What needs the rest of the config (a required server no layer
// configures, an OAuth agent no layer defines) is checked by
// internal/config once the layers merge; the table keeps where each such
// name was written (Gateway.RequiredAt, OAuth.AgentsAt) so that the report
// points at it.
package block
