// Package hostapi is the vocabulary of the host's API that the gateway
// shares with it: the catalog entries an agent sees (Tool, Resource,
// Template, Prompt), the options of a call and of a session, the errors a
// caller tells apart, and what a request's context carries to the host
// (its downstream session, its trace context).
//
// It lives apart from host so that the gateway, which serves a host, need
// not import the host facade, which in turn serves as a gateway; host
// names each type (host.Tool is hostapi.Tool), so embedders never see this
// package.
package hostapi
