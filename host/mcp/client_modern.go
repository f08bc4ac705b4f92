package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
)

// The client's side of the stateless revision (2026-07-28).
//
// Era selection: Connect first sends server/discover with the preferred
// modern version in _meta, bounded by ProbeTimeout. A DiscoverResult
// means a modern server; a recognized modern error (ModernError) means a
// modern server too: UnsupportedProtocolVersionError names the versions
// it speaks, and the probe is repeated with one of them (a bounded number
// of times). Any other error, or no answer in time, means a legacy server
// and the client falls back to initialize (basic/versioning, Backward
// Compatibility; on stdio the probe is the spec's, over HTTP the
// transport turns a 4xx whose body is a JSON-RPC error into that error).
//
// A modern client sends no initialize and no notifications: every
// request carries the version, clientInfo, clientCapabilities and (when
// SetLogLevel was called) logLevel in _meta. The server's identity,
// capabilities and instructions come from server/discover and are kept
// as the InitializeResult legacy code reads. Results that are
// input_required (MRTR) are fulfilled through the same handlers that
// serve a legacy server's own requests and retried under a new id with
// inputResponses and the exact requestState, up to maxInputRounds.

// CodeResourceNotFound is the legacy revisions' code for a resource that
// does not exist; a modern server says -32602, which ReadResource maps
// back to it so that callers need to know only one.
const CodeResourceNotFound = -32002

// maxInputRounds bounds the MRTR rounds of one request: a server that
// keeps asking cannot keep the client busy forever.
const maxInputRounds = 16

// maxProbes bounds the server/discover attempts of era selection (a
// server that answers UnsupportedProtocolVersionError while listing the
// version asked for would otherwise be asked again and again).
const maxProbes = 3

// DefaultProbeTimeout bounds the server/discover probe of a server whose
// era is not known, over a stream transport (stdio): a legacy server may
// not answer a request that comes before initialize at all.
const DefaultProbeTimeout = 5 * time.Second

// ModernMismatchError is returned when a server is modern but shares no
// version with this client, or fails the discovery.
type ModernMismatchError struct {
	Supported []string // what the server said it speaks, when it said
	Err       error
}

func (e *ModernMismatchError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("server/discover: %v", e.Err)
	}
	return fmt.Sprintf("the server speaks MCP %q; Nexus speaks %q. Upgrade the server or Nexus so that they share a version", e.Supported, AllVersions)
}

func (e *ModernMismatchError) Unwrap() error { return e.Err }

// InputNotDeclaredError is returned when a server's InputRequiredResult
// asks for input the client did not declare a capability for (the server
// MUST NOT do that); the request is not retried.
type InputNotDeclaredError struct {
	Method, Key, Request string
}

func (e *InputNotDeclaredError) Error() string {
	return fmt.Sprintf("%s: the server asked %s (input %q) in an input_required result, but this client did not declare that capability; the server broke the MRTR rules, so the request was not retried", e.Method, e.Request, e.Key)
}

// TooManyRoundsError is returned when a server answers input_required
// more than maxInputRounds times for one request.
type TooManyRoundsError struct{ Method string }

func (e *TooManyRoundsError) Error() string {
	return fmt.Sprintf("%s: the server asked for input %d times in a row; giving up (a server that keeps answering input_required would hold the call forever)", e.Method, maxInputRounds)
}

type rememberedKey struct{}

// WithRememberedVersion returns ctx telling Connect the version a server
// spoke the last time (the spec lets a client keep a server's era for the
// server's lifetime and re-probe when the assumption fails). A legacy
// version skips the probe, which a legacy server that ignores it would
// otherwise make wait ProbeTimeout on every connect; when the handshake
// is then refused, the era is probed afresh. ClientOptions.ProtocolVersion
// wins over it.
func WithRememberedVersion(ctx context.Context, version string) context.Context {
	return context.WithValue(ctx, rememberedKey{}, version)
}

// RememberedVersion is the version WithRememberedVersion put in ctx.
func RememberedVersion(ctx context.Context) string {
	v, _ := ctx.Value(rememberedKey{}).(string)
	return v
}

// start selects the era and makes the session ready.
func (c *Client) start(ctx context.Context) error {
	v := c.opts.ProtocolVersion
	if r := RememberedVersion(ctx); v == "" && slices.Contains(SupportedVersions, r) {
		err := c.initialize(ctx, r)
		var re *RPCError
		if err == nil || !errors.As(err, &re) || c.peer.Err() != nil {
			return err
		}
		c.log.Debug("the server refused the handshake it accepted before; probing its era again", "error", err)
	}
	switch {
	case v == "":
		modern, err := c.probe(ctx, ModernVersions[0], true)
		if modern || err != nil {
			return err
		}
		err = c.initialize(ctx, LatestVersion)
		var re *RPCError
		if errors.As(err, &re) && re.Code == CodeUnsupportedProtocolVersion && c.peer.Err() == nil {
			// A modern server that was too slow for the probe refuses
			// the handshake naming what it speaks (the spec asks modern
			// servers to): go forward to it rather than fail.
			for _, mv := range ModernVersions {
				if slices.Contains(supportedOf(re), mv) {
					c.log.Debug("the server refused initialize as a modern one; probing again", "supported", supportedOf(re))
					c.opts.ProbeTimeout = -1 // no short bound this time
					if modern, perr := c.probe(ctx, mv, false); modern {
						return perr
					}
				}
			}
		}
		return err
	case IsModern(v):
		modern, err := c.probe(ctx, v, false)
		if err == nil && !modern {
			err = &ModernMismatchError{Err: errors.New("the server did not answer as a modern server")}
		}
		return err
	case slices.Contains(SupportedVersions, v):
		return c.initialize(ctx, v)
	}
	return fmt.Errorf("protocol version %q is not one Nexus speaks (%q)", v, AllVersions)
}

// probe sends server/discover. modern is true when the server answered
// as a modern one (err then says whether the session is usable); false
// with a nil err means fall back to initialize (only when fallback).
func (c *Client) probe(ctx context.Context, version string, fallback bool) (modern bool, err error) {
	// A transport that answers each request on an exchange of its own
	// (HTTP) answers a legacy server's refusal too: silence there is no
	// sign of a legacy server, and the probe may carry an authorization
	// dance, so it gets the request timeout. Over a stream (stdio) a
	// legacy server may ignore the probe: it gets the short bound.
	// Either way it leaves half the time left to connect for the
	// handshake it may fall back to.
	var opts []CallOption
	if _, exchanges := c.peer.conn.(RequestWriter); c.opts.ProbeTimeout >= 0 && (c.opts.ProbeTimeout > 0 || !exchanges) {
		timeout := c.opts.ProbeTimeout
		if timeout == 0 {
			timeout = DefaultProbeTimeout
		}
		if dl, ok := ctx.Deadline(); ok {
			timeout = max(min(timeout, time.Until(dl)/2), time.Millisecond)
		}
		opts = append(opts, WithTimeout(timeout))
	}
	for range maxProbes {
		c.setVersion(version)
		res, err := c.discover(ctx, opts...)
		if err == nil {
			pick := ""
			for _, v := range ModernVersions {
				if slices.Contains(res.SupportedVersions, v) {
					pick = v
					break
				}
			}
			switch {
			case len(res.SupportedVersions) == 0 && fallback:
				// Not a DiscoverResult (it must list versions): a legacy
				// server that answers anything the same way.
				c.log.Debug("server/discover answered without supportedVersions; the server is legacy, initializing")
				return false, nil
			case pick != "" && fallback && !c.opts.PreferModern && sharesLegacy(res.SupportedVersions):
				c.log.Debug("a dual-era server; initializing (ClientOptions.PreferModern speaks its modern era)", "supported", res.SupportedVersions)
				return false, nil
			case pick == version:
				c.becomeModern(res)
				return true, nil
			case pick != "":
				version = pick
				continue
			case fallback && sharesLegacy(res.SupportedVersions):
				c.log.Debug("server/discover lists only legacy versions; initializing", "supported", res.SupportedVersions)
				return false, nil
			}
			return true, &ModernMismatchError{Supported: res.SupportedVersions}
		}
		var re *RPCError
		if errors.As(err, &re) && ModernError(re.Code) {
			if re.Code != CodeUnsupportedProtocolVersion {
				return true, &ModernMismatchError{Err: err}
			}
			supported := supportedOf(re)
			pick := ""
			for _, v := range ModernVersions {
				if slices.Contains(supported, v) {
					pick = v
					break
				}
			}
			switch {
			case pick != "":
				c.log.Debug("server rejected the protocol version; retrying with one it lists", "asked", version, "supported", supported)
				version = pick
				continue
			case fallback && sharesLegacy(supported):
				return false, nil
			}
			return true, &ModernMismatchError{Supported: supported, Err: err}
		}
		if ctx.Err() != nil {
			return true, fmt.Errorf("server/discover: %w", err)
		}
		if !fallback {
			return true, &ModernMismatchError{Err: err}
		}
		c.log.Debug("server/discover probe failed; the server is legacy, initializing", "error", err)
		return false, nil
	}
	return true, &ModernMismatchError{Err: fmt.Errorf("the server kept rejecting the protocol version after %d attempts", maxProbes)}
}

func sharesLegacy(supported []string) bool {
	for _, v := range supported {
		if slices.Contains(SupportedVersions, v) {
			return true
		}
	}
	return false
}

// supportedOf reads data.supported of an UnsupportedProtocolVersionError.
func supportedOf(re *RPCError) []string {
	var d struct {
		Supported []string `json:"supported"`
	}
	_ = json.Unmarshal(re.Data, &d)
	if len(d.Supported) > 32 {
		d.Supported = d.Supported[:32]
	}
	return d.Supported
}

// discoverResult is DiscoverResult with the serverInfo some servers put
// beside the capabilities instead of in _meta.
type discoverResult struct {
	DiscoverResult
	ServerInfo *Implementation `json:"serverInfo,omitempty"`
}

// discover sends server/discover under the current version.
func (c *Client) discover(ctx context.Context, opts ...CallOption) (*discoverResult, error) {
	params := struct {
		Meta Meta `json:"_meta"`
	}{c.meta(nil)}
	raw, err := c.peer.CallRaw(ctx, MethodServerDiscover, &params, opts...)
	if err != nil {
		return nil, err
	}
	var res discoverResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("server/discover: malformed result: %w", err)
	}
	if res.ServerInfo == nil {
		if b, ok := res.Meta[MetaServerInfo]; ok {
			res.ServerInfo = new(Implementation)
			if json.Unmarshal(b, res.ServerInfo) != nil {
				res.ServerInfo = nil
			}
		}
	}
	return &res, nil
}

// becomeModern records a modern server's discovery as the session's
// identity, and starts listening for changes when the server has any.
func (c *Client) becomeModern(res *discoverResult) {
	c.modern = true
	c.init = InitializeResult{
		ProtocolVersion: c.version,
		Capabilities:    res.Capabilities,
		Instructions:    res.Instructions,
		Meta:            res.Meta,
	}
	if res.ServerInfo != nil {
		c.init.ServerInfo = *res.ServerInfo
	}
	c.supported = slices.Clone(res.SupportedVersions)
	close(c.ready)
	c.listen()
}

// setVersion sets the version modern requests carry and the _meta values
// that do not change per request.
func (c *Client) setVersion(v string) {
	c.version = v
	c.rawVersion, _ = json.Marshal(v)
	c.rawInfo, _ = json.Marshal(c.opts.Info)
	// The tasks extension is always declared: CallTool follows a task
	// to its end (client_tasks.go).
	c.rawCaps, _ = json.Marshal(withTasks(c.capabilities()))
}

// Modern reports whether the server speaks the stateless revision.
func (c *Client) Modern() bool { return c.modern }

// Era is "modern" (per-request metadata, 2026-07-28 and later) or
// "legacy" (the initialize handshake).
func (c *Client) Era() string {
	if c.modern {
		return "modern"
	}
	return "legacy"
}

// SupportedVersions is what a modern server said it speaks in
// server/discover (nil for a legacy server).
func (c *Client) SupportedVersions() []string { return c.supported }

// metaFor is meta for a request made on ctx, with the log level the
// handler serving ctx asks for (LogAsker), if any; when the caller answers
// input requests itself (WithPassInput, a gateway in front of a modern
// agent), the capabilities and log level are the agent's
// (RequestMetaOf), since it is the agent that will answer what the server
// asks and read what it logs.
func (c *Client) metaFor(ctx context.Context, m Meta) Meta {
	out := c.meta(m)
	if !PassInput(ctx) {
		if l := askedLogLevel(ctx); l != "" {
			out[MetaLogLevel], _ = json.Marshal(l) // the serving handler's (LogAsker), over SetLogLevel's
		}
		return out
	}
	if rm, ok := RequestMetaOf(ctx); ok {
		out[MetaClientCapabilities], _ = json.Marshal(rm.Capabilities)
		if rm.LogLevel != "" {
			out[MetaLogLevel], _ = json.Marshal(rm.LogLevel)
		}
	}
	return out
}

// meta is m (not changed) with the modern request fields added.
func (c *Client) meta(m Meta) Meta {
	out := make(Meta, len(m)+4)
	for k, v := range m {
		out[k] = v
	}
	out[MetaProtocolVersion] = c.rawVersion
	out[MetaClientInfo] = c.rawInfo
	out[MetaClientCapabilities] = c.rawCaps
	c.mu.Lock()
	lvl := c.logLevel
	c.mu.Unlock()
	if lvl != "" {
		out[MetaLogLevel], _ = json.Marshal(lvl)
	}
	return out
}

// readInputRequired reads raw as an InputRequiredResult; ok is false for any
// other result (resultType missing means complete).
func readInputRequired(method string, raw json.RawMessage) (*InputRequiredResult, bool, error) {
	if !bytes.Contains(raw, []byte(`"`+ResultInputRequired+`"`)) {
		return nil, false, nil
	}
	var r InputRequiredResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, false, fmt.Errorf("%s: malformed result: %w", method, err)
	}
	if r.ResultType != ResultInputRequired {
		return nil, false, nil
	}
	if err := r.Check(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", method, err)
	}
	return &r, true, nil
}

// rounds runs a request that may be answered input_required: send sends
// it with in (nil the first time), a new request (and id) each round.
func (c *Client) rounds(ctx context.Context, method string, send func(in *InputParams) (json.RawMessage, error)) (json.RawMessage, error) {
	var in *InputParams
	pass := PassInput(ctx)
	if pass {
		in = InputOf(ctx)
	}
	for round := 0; ; round++ {
		raw, err := send(in)
		if err != nil {
			return nil, err
		}
		if !c.modern {
			return raw, nil
		}
		ir, ok, err := readInputRequired(method, raw)
		if err != nil || !ok {
			return raw, err
		}
		if pass {
			return nil, &InputRequiredError{Result: ir}
		}
		if round >= maxInputRounds {
			return nil, &TooManyRoundsError{Method: method}
		}
		if in, err = c.fulfil(ctx, method, ir); err != nil {
			return nil, err
		}
	}
}

// fulfil answers every input request of r through the client's handlers,
// the ones a legacy server's own requests go to.
func (c *Client) fulfil(ctx context.Context, method string, r *InputRequiredResult) (*InputParams, error) {
	in := &InputParams{RequestState: r.RequestState}
	if len(r.InputRequests) == 0 {
		return in, nil
	}
	keys := make([]string, 0, len(r.InputRequests))
	for k := range r.InputRequests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	in.InputResponses = make(InputResponses, len(keys))
	h := clientHandler{c}
	// The handlers run on the caller's context (its values, its
	// cancellation), which CallOf also names, as it does for what a legacy
	// server sends on a request's own stream.
	ctx = context.WithValue(ctx, callKey{}, &callRef{ctx: ctx})
	for _, k := range keys {
		q := r.InputRequests[k]
		declared := false
		switch q.Method {
		case MethodElicitationCreate:
			declared = c.opts.Elicitation != nil
		case MethodSamplingCreateMessage:
			declared = c.opts.Sampling != nil
		case MethodRootsList:
			declared = c.opts.Roots != nil
		}
		if !declared {
			return nil, &InputNotDeclaredError{Method: method, Key: k, Request: q.Method}
		}
		params := q.Params
		if len(params) == 0 {
			params = json.RawMessage("{}")
		}
		res, err := h.HandleRequest(ctx, q.Method, params)
		if err != nil {
			return nil, fmt.Errorf("%s: answering the server's %s (input %q): %w", method, q.Method, k, err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding the answer to %s (input %q): %w", method, q.Method, k, err)
		}
		in.InputResponses[k] = b
	}
	return in, nil
}

// reissue reports whether err is a modern response stream that broke off
// before its response (the transport marks those): the request is lost
// and a safe one may be sent again as a new request.
func reissue(err error) bool {
	var re *RPCError
	return errors.As(err, &re) && re.Code == CodeInternalError && bytes.Contains(re.Data, []byte(`"reissue":true`))
}

// modernCall sends a modern request, again once as a new request when
// its response stream broke off and safe says repeating it does no harm.
func (c *Client) modernCall(ctx context.Context, method string, params any, safe bool, opts ...CallOption) (json.RawMessage, error) {
	raw, err := c.peer.CallRaw(ctx, method, params, opts...)
	if err != nil && safe && reissue(err) && ctx.Err() == nil {
		c.log.Debug("the response stream broke off; sending the request again", "method", method)
		raw, err = c.peer.CallRaw(ctx, method, params, opts...)
	}
	return raw, err
}

// cacheHint reads ttlMs of a cacheable modern result; ttl is 0 (stale at
// once) when it is missing or negative.
func cacheHint(raw json.RawMessage) time.Duration {
	var h struct {
		TTLMs int64 `json:"ttlMs"`
	}
	if !bytes.Contains(raw, []byte(`"ttlMs"`)) || json.Unmarshal(raw, &h) != nil || h.TTLMs <= 0 {
		return 0
	}
	const maxTTL = 24 * time.Hour
	if h.TTLMs > int64(maxTTL/time.Millisecond) {
		return maxTTL
	}
	return time.Duration(h.TTLMs) * time.Millisecond
}

// checkToolHeaders drops the tools whose x-mcp-header annotations are
// invalid (the spec's rule: one bad definition must not keep the others
// from being used), logging why, and records the valid annotations for
// CallTool.
func (c *Client) checkToolHeaders(tools []Tool) []Tool {
	anns := map[string][]HeaderAnnotation{}
	out := tools[:0:0]
	for _, t := range tools {
		a, err := HeaderAnnotations(t.InputSchema)
		if err != nil {
			c.log.Warn("ignoring a tool whose inputSchema has an invalid x-mcp-header annotation", "tool", t.Name, "reason", err)
			continue
		}
		if len(a) > 0 {
			anns[t.Name] = a
		}
		out = append(out, t)
	}
	c.mu.Lock()
	c.toolHeaders = anns
	c.mu.Unlock()
	return out
}

// toolCallSafe says whether a tools/call may be sent twice: the tool says
// it only reads or is idempotent.
func (c *Client) toolCallSafe(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.tools.items {
		if t.Name == name && t.Annotations != nil {
			a := t.Annotations
			return (a.ReadOnlyHint != nil && *a.ReadOnlyHint) || (a.IdempotentHint != nil && *a.IdempotentHint)
		}
	}
	return false
}

// listenRetry bounds the wait between attempts to reopen the change
// stream after it broke.
const (
	listenRetryMin = 500 * time.Millisecond
	listenRetryMax = 30 * time.Second
	// listenTimeout is the request timeout of subscriptions/listen: the
	// stream is meant to stay open for the whole session.
	listenTimeout = 100 * 365 * 24 * time.Hour
)

// listenFilter is what the change stream opts in to: the list changes the
// server announces it can send, and the subscribed resources.
func (c *Client) listenFilter() (SubscriptionFilter, bool) {
	caps := c.init.Capabilities
	var f SubscriptionFilter
	f.ToolsListChanged = caps.Tools != nil && caps.Tools.ListChanged
	f.PromptsListChanged = caps.Prompts != nil && caps.Prompts.ListChanged
	f.ResourcesListChanged = caps.Resources != nil && caps.Resources.ListChanged
	c.mu.Lock()
	for uri := range c.subs {
		f.ResourceSubscriptions = append(f.ResourceSubscriptions, uri)
	}
	c.mu.Unlock()
	sort.Strings(f.ResourceSubscriptions)
	any := f.ToolsListChanged || f.PromptsListChanged || f.ResourcesListChanged || len(f.ResourceSubscriptions) > 0
	return f, any
}

// listen (re)opens the subscriptions/listen stream with the current
// filter, ending the one open before. The stream keeps the list caches
// fresh the way legacy list_changed notifications do, and carries
// notifications/resources/updated for Subscribe.
// The channel it returns is closed when the server acknowledges the new
// stream (nil: no stream is open).
func (c *Client) listen() <-chan struct{} {
	f, ok := c.listenFilter()
	c.mu.Lock()
	if c.stopListen != nil {
		c.stopListen()
		c.stopListen = nil
	}
	if !ok || c.peer.Err() != nil {
		c.mu.Unlock()
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stopListen = cancel
	ack := make(chan struct{})
	c.listenAck = ack
	c.mu.Unlock()
	go c.listenLoop(ctx, f)
	return ack
}

func (c *Client) listenLoop(ctx context.Context, f SubscriptionFilter) {
	wait := listenRetryMin
	for {
		params := SubscriptionsListenParams{Notifications: f, Meta: c.meta(nil)}
		start := time.Now()
		_, err := c.peer.CallRaw(ctx, MethodSubscriptionsListen, &params, WithTimeout(listenTimeout))
		if ctx.Err() != nil || c.peer.Err() != nil {
			return
		}
		var re *RPCError
		if errors.As(err, &re) && !reissue(err) {
			c.log.Warn("the server refused subscriptions/listen; list changes are seen only when cached lists expire", "error", err)
			return
		}
		// A graceful end (a result) or a broken stream: the server holds
		// no subscription state, so open it again, after a pause that
		// grows while attempts fail fast.
		if time.Since(start) > listenRetryMax {
			wait = listenRetryMin
		}
		c.log.Debug("the change stream ended; reopening it", "error", err, "in", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.peer.Done():
			t.Stop()
			return
		}
		wait = min(wait*2, listenRetryMax)
		// Whatever changed while the stream was down is unknown: the
		// caches must be fetched again.
		invalidate(c, c.tools)
		invalidate(c, c.resources)
		invalidate(c, c.prompts)
	}
}
