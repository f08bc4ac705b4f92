package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/internal/wire"
)

// Handlers for requests a server sends to the client. A client declares a
// capability only when its handler is set; without one the request is
// answered with method not found.
type (
	SamplingHandler    func(ctx context.Context, p *CreateMessageParams) (*CreateMessageResult, error)
	ElicitationHandler func(ctx context.Context, p *ElicitParams) (*ElicitResult, error)
	RootsHandler       func(ctx context.Context) ([]Root, error)
	// RawHandler serves a sampling or elicitation request as the server
	// sent it and returns the result as it is to be sent (see
	// ClientOptions.Raw).
	RawHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
)

// ClientOptions configure a client session. The zero value is usable.
type ClientOptions struct {
	Info   Implementation // default {Name: "nexus", Version: "dev"}
	Logger hclog.Logger

	// Timeout per request (default 30 s); see PeerOptions.
	Timeout    time.Duration
	MaxTimeout time.Duration
	// MaxHandlers bounds concurrent server-initiated requests (default 32).
	MaxHandlers int

	Sampling    SamplingHandler
	Elicitation ElicitationHandler
	// ElicitationURL declares URL-mode elicitation as well as form mode.
	ElicitationURL bool
	Roots          RootsHandler
	// Raw, when set, serves the sampling and elicitation requests that
	// Sampling and Elicitation declare, instead of them: their params
	// only checked (an object; an elicitation's mode), the result sent as
	// it is. A caller that passes them on (the gateway's bridge) saves
	// decoding them into typed params, encoding them again, and the same
	// for the answer.
	Raw RawHandler
	// RootsListChanged declares that the client sends roots list_changed.
	RootsListChanged bool

	// OnLog receives notifications/message.
	OnLog func(LogMessage)
	// OnListChanged is called after a list_changed notification has refreshed
	// the cached list; kind is "tools", "resources" or "prompts".
	OnListChanged func(kind string)
	// OnResourceUpdated receives notifications/resources/updated.
	OnResourceUpdated func(uri string)
	// OnNotification receives every other notification.
	OnNotification func(method string, params json.RawMessage)

	// ProtocolVersion fixes the version: "" (the default) probes with
	// server/discover and falls back to initialize (see client_modern.go);
	// a modern version speaks only that; a legacy one skips the probe
	// (for a server whose era was remembered, or a caller that must
	// speak one era).
	ProtocolVersion string
	// PreferModern speaks 2026-07-28 to a dual-era server (one whose
	// server/discover also lists a handshake version). By default such a
	// server gets the handshake, whose sessions carry what Nexus's legacy
	// clients rely on (server-initiated requests, logging/setLevel,
	// resources/subscribe), and only a modern-only server is spoken to
	// statelessly.
	PreferModern bool
	// ProbeTimeout bounds the server/discover probe (0: DefaultProbeTimeout
	// over a stream such as stdio, the request timeout over HTTP; it never
	// takes more than half the time left before ctx's deadline; negative:
	// the request timeout everywhere).
	ProbeTimeout time.Duration
}

// Client is an initialized MCP client session over one Conn.
type Client struct {
	peer *Peer
	opts ClientOptions
	log  hclog.Logger
	init InitializeResult
	// ready closes once init is set; notifications that arrive before (some
	// servers announce list_changed during initialize) must not read it.
	ready chan struct{}

	mu        sync.Mutex
	tools     *cached[Tool]
	resources *cached[Resource]
	prompts   *cached[Prompt]
	templates *cached[ResourceTemplate]

	refreshing map[string]int // list kind -> fetches running or queued

	// The stateless revision (client_modern.go). modern, version and
	// the raw values are set before Connect returns and never after.
	modern                       bool
	version                      string
	rawVersion, rawInfo, rawCaps json.RawMessage
	supported                    []string
	logLevel                     LoggingLevel                  // under mu; sent in _meta
	toolHeaders                  map[string][]HeaderAnnotation // under mu; by tool name
	subs                         map[string]bool               // under mu; Subscribe's URIs
	stopListen                   context.CancelFunc            // under mu
	listenAck                    chan struct{}                 // closed when the newest change stream is acknowledged; under mu
}

type cached[T any] struct {
	items []T
	valid bool
	gen   uint64
	ver   uint64 // listVersions number of items, while valid
	// expires ends a modern list's freshness (its ttlMs); zero: fresh
	// until a list_changed (legacy).
	expires time.Time
}

// fresh reports whether k's items may be served; c.mu is held.
func (k *cached[T]) fresh() bool {
	return k.valid && (k.expires.IsZero() || time.Now().Before(k.expires))
}

// listVersions numbers every list a client caches, across all clients of
// the process, so a version never comes back with other items (a
// reconnected server's new client starts no count of its own).
var listVersions atomic.Uint64

// UnsupportedVersionError is returned when the server answers initialize
// with a protocol version this client does not speak.
type UnsupportedVersionError struct {
	Server string
}

func (e *UnsupportedVersionError) Error() string {
	return fmt.Sprintf("server speaks MCP protocol version %q; Nexus supports %v. Upgrade the server or use one that supports a listed version", e.Server, SupportedVersions)
}

// NotSupportedError is returned for a call the server did not declare a
// capability for. Nothing is sent.
type NotSupportedError struct {
	Capability string
}

func (e *NotSupportedError) Error() string {
	return fmt.Sprintf("the server does not offer %s (it did not declare the capability at initialize)", e.Capability)
}

// Connect starts a peer over conn and performs the initialize handshake.
// On failure conn is closed.
func Connect(ctx context.Context, conn Conn, opts ClientOptions) (*Client, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Info.Name == "" {
		opts.Info = Implementation{Name: "nexus", Version: "dev"}
	}
	c := &Client{opts: opts, log: opts.Logger, ready: make(chan struct{}), tools: &cached[Tool]{}, resources: &cached[Resource]{}, prompts: &cached[Prompt]{}, templates: &cached[ResourceTemplate]{}}
	c.peer = NewPeer(conn, PeerOptions{
		Logger:      opts.Logger,
		Handler:     clientHandler{c},
		Timeout:     opts.Timeout,
		MaxTimeout:  opts.MaxTimeout,
		MaxHandlers: opts.MaxHandlers,
	})
	c.peer.Start()
	if err := c.start(ctx); err != nil {
		c.peer.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) capabilities() ClientCapabilities {
	var caps ClientCapabilities
	if c.opts.Roots != nil {
		caps.Roots = &RootsCapability{ListChanged: c.opts.RootsListChanged}
	}
	if c.opts.Sampling != nil {
		caps.Sampling = &SamplingCapability{}
	}
	if c.opts.Elicitation != nil {
		caps.Elicitation = &ElicitationCapability{Form: &struct{}{}}
		if c.opts.ElicitationURL {
			caps.Elicitation.URL = &struct{}{}
		}
	}
	return caps
}

func (c *Client) initialize(ctx context.Context, version string) error {
	params := InitializeParams{
		ProtocolVersion: version,
		Capabilities:    c.capabilities(),
		ClientInfo:      c.opts.Info,
	}
	var res InitializeResult
	if err := c.peer.Call(ctx, MethodInitialize, params, &res); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if !slices.Contains(SupportedVersions, res.ProtocolVersion) {
		return &UnsupportedVersionError{Server: res.ProtocolVersion}
	}
	c.init = res
	close(c.ready)
	// notifications/initialized carries no params (seed 1.1).
	if err := c.peer.Notify(ctx, NotificationInitialized, nil); err != nil {
		return fmt.Errorf("sending initialized: %w", err)
	}
	return nil
}

// ProtocolVersion is the version both sides agreed on (for a modern
// server: the one every request carries).
func (c *Client) ProtocolVersion() string { return c.init.ProtocolVersion }

// ServerInfo, Capabilities and Instructions are what the server sent at initialize.
func (c *Client) ServerInfo() Implementation         { return c.init.ServerInfo }
func (c *Client) Capabilities() ServerCapabilities   { return c.init.Capabilities }
func (c *Client) Instructions() string               { return c.init.Instructions }
func (c *Client) InitializeResult() InitializeResult { return c.init }
func (c *Client) Peer() *Peer                        { return c.peer }
func (c *Client) Done() <-chan struct{}              { return c.peer.Done() }
func (c *Client) Err() error                         { return c.peer.Err() }
func (c *Client) Close() error {
	c.mu.Lock()
	if c.stopListen != nil {
		c.stopListen()
		c.stopListen = nil
	}
	c.mu.Unlock()
	return c.peer.Close()
}
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.peer.Notify(ctx, method, params)
}

// Ping checks the server answers and returns the round trip time. The
// stateless revision has no ping: a modern server is asked
// server/discover, the cheapest request every one serves.
func (c *Client) Ping(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	var err error
	if c.modern {
		_, err = c.discover(ctx)
	} else {
		err = c.peer.Call(ctx, MethodPing, nil, nil)
	}
	return time.Since(start), err
}

// CallOptions change one tools/call.
type CallOptions struct {
	// OnProgress, when set, asks the server for progress notifications.
	OnProgress func(Progress)
	// Timeout overrides the session's request timeout.
	Timeout time.Duration
	// Meta is the request's _meta (a progress token is added to it).
	Meta Meta
	// Wire, when not nil, is set to the result's JSON as the server sent
	// it, when encoding the decoded result again would say exactly that
	// (no member the result type does not hold, no key given twice, no
	// string changed by decoding it); it is set to nil otherwise. A
	// program that passes the result on unchanged writes these bytes
	// instead of encoding it again. They share the result's memory.
	Wire *json.RawMessage
}

// argBufs hold encoded arguments while a request is built: its frame is a
// copy, so the buffer is free again once the call returns.
var argBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// CallTool calls a tool. args is anything that marshals to a JSON object
// (json.RawMessage is passed through). A tool that ran and failed returns a
// result with IsError set, not an error.
func (c *Client) CallTool(ctx context.Context, name string, args any, o *CallOptions) (*CallToolResult, error) {
	params := CallToolParams{Name: name}
	switch a := args.(type) {
	case nil:
	case json.RawMessage:
		params.Arguments = a
	default:
		buf := argBufs.Get().(*[]byte)
		defer func() {
			if cap(*buf) <= 64<<10 { // a huge one is left to the collector
				argBufs.Put(buf)
			}
		}()
		b, err := wire.AppendAny((*buf)[:0], args)
		*buf = b
		if err != nil {
			return nil, fmt.Errorf("tools/call %s: encoding arguments: %w", name, err)
		}
		params.Arguments = b
	}
	var opts []CallOption
	params.Meta, opts = c.callOptions(o)
	if c.modern {
		return c.callModern(ctx, &params, o, opts)
	}
	raw, err := c.peer.CallRaw(ctx, MethodToolsCall, &params, opts...)
	if err != nil {
		return nil, err
	}
	return decodeResult(MethodToolsCall, raw, o)
}

// callModern is CallTool for a modern server: _meta, the Mcp-Param
// headers of the tool's x-mcp-header annotations, and MRTR rounds.
func (c *Client) callModern(ctx context.Context, p *CallToolParams, o *CallOptions, opts []CallOption) (*CallToolResult, error) {
	headers := func() context.Context {
		c.mu.Lock()
		anns := c.toolHeaders[p.Name]
		c.mu.Unlock()
		if h := ParamHeaders(anns, p.Arguments); len(h) > 0 {
			return WithParamHeaders(ctx, h)
		}
		return ctx
	}
	safe := c.toolCallSafe(p.Name)
	send := func(in *InputParams) (json.RawMessage, error) {
		// Fields of its own, not CallToolParams embedded: that one's
		// hand-written encoder would be promoted and drop the rest.
		params := struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
			Meta      Meta            `json:"_meta"`
			InputParams
		}{Name: p.Name, Arguments: p.Arguments, Meta: c.metaFor(ctx, p.Meta)}
		if in != nil {
			params.InputParams = *in
		}
		raw, err := c.modernCall(headers(), MethodToolsCall, &params, safe, opts...)
		var re *RPCError
		if errors.As(err, &re) && re.Code == CodeHeaderMismatch {
			// The tool's inputSchema may have changed (the spec's advice):
			// list again, then send with the headers it asks for now.
			if _, lerr := c.ListTools(ctx); lerr == nil {
				raw, err = c.modernCall(headers(), MethodToolsCall, &params, safe, opts...)
			}
		}
		return raw, err
	}
	raw, err := c.rounds(ctx, MethodToolsCall, send)
	if err == nil && isTaskResult(raw) {
		raw, err = c.followTask(ctx, MethodToolsCall, raw, opts)
	}
	if err != nil {
		return nil, err
	}
	return decodeResult(MethodToolsCall, raw, o)
}

// decodeResult decodes a tools/call result from raw, the response's own
// copy (CallRaw), and sets o.Wire when asked to.
func decodeResult(method string, raw json.RawMessage, o *CallOptions) (*CallToolResult, error) {
	return decodeReply(method, raw, o, (*CallToolResult).decode)
}

// decodeReply decodes a result of type T from raw, the response's own
// copy (CallRaw), with decode, and sets o.Wire when asked to: raw itself
// when encoding the result again would say exactly that, else nil.
func decodeReply[T any](method string, raw json.RawMessage, o *CallOptions, decode func(*T, []byte, *dec) error) (*T, error) {
	// The decoder's state escapes (the codecs reach it through generic
	// dispatch): it shares the result's allocation.
	x := &struct {
		res T
		d   dec
	}{d: dec{owned: true}}
	if err := decode(&x.res, raw, &x.d); err != nil {
		return nil, fmt.Errorf("%s: malformed result: %w", method, err)
	}
	if o != nil && o.Wire != nil {
		*o.Wire = nil
		if !x.d.altered {
			*o.Wire = raw
		}
	}
	return &x.res, nil
}

// callOptions are a tools/call's _meta and call options from o: its
// timeout, and a progress token routed to o.OnProgress.
func (c *Client) callOptions(o *CallOptions) (Meta, []CallOption) {
	if o == nil {
		return nil, nil
	}
	meta := o.Meta
	var opts []CallOption
	if o.Timeout > 0 {
		opts = append(opts, WithTimeout(o.Timeout))
	}
	if o.OnProgress != nil {
		tok := c.peer.NewProgressToken()
		meta = withProgressToken(meta, tok)
		opts = append(opts, WithProgress(tok, o.OnProgress))
	}
	return meta, opts
}

func withProgressToken(m Meta, tok json.RawMessage) Meta {
	out := make(Meta, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out["progressToken"] = tok
	return out
}

// maxPages bounds a paginated listing: a server that keeps returning cursors
// cannot keep the client busy forever.
const maxPages = 10000

// paginate fetches every page of a list method. ttl is how long the list
// stays fresh: the shortest ttlMs of its pages for a modern server
// (0: stale at once), -1 for a legacy one (fresh until list_changed).
func paginate[R any, T any](ctx context.Context, c *Client, method string, items func(*R) []T, next func(*R) string) ([]T, time.Duration, error) {
	ttl := time.Duration(-1)
	var all []T
	cursor := ""
	extra := listMetaOf(ctx)
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= maxPages {
			return nil, 0, fmt.Errorf("%s: more than %d pages; the server keeps returning a nextCursor", method, maxPages)
		}
		var r R
		if c.modern {
			params := struct {
				Cursor string `json:"cursor,omitempty"`
				Meta   Meta   `json:"_meta"`
			}{cursor, c.meta(extra)}
			raw, err := c.modernCall(ctx, method, &params, true)
			if err == nil {
				err = decodeRaw(method, raw, &r)
			}
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", method, err)
			}
			if t := cacheHint(raw); ttl < 0 || t < ttl {
				ttl = t
			}
		} else {
			var params any
			switch {
			case extra != nil:
				params = struct {
					Cursor string `json:"cursor,omitempty"`
					Meta   Meta   `json:"_meta"`
				}{cursor, extra}
			case cursor != "":
				params = paginatedParams{Cursor: cursor}
			}
			if err := c.peer.Call(ctx, method, params, &r); err != nil {
				return nil, 0, fmt.Errorf("%s: %w", method, err)
			}
		}
		all = append(all, items(&r)...)
		cursor = next(&r)
		if cursor == "" {
			return all, ttl, nil
		}
		if seen[cursor] {
			return nil, 0, fmt.Errorf("%s: the server returned cursor %q twice; stopping to avoid a loop", method, cursor)
		}
		seen[cursor] = true
	}
}

// ListTools fetches every page of tools/list and refreshes the cache.
func (c *Client) ListTools(ctx context.Context) ([]Tool, error) {
	if c.init.Capabilities.Tools == nil {
		return nil, &NotSupportedError{"tools"}
	}
	return refresh(ctx, c, c.tools, func(ctx context.Context) ([]Tool, time.Duration, error) {
		tools, ttl, err := paginate(ctx, c, MethodToolsList,
			func(r *ListToolsResult) []Tool { return r.Tools },
			func(r *ListToolsResult) string { return r.NextCursor })
		if err == nil && c.modern {
			tools = c.checkToolHeaders(tools)
		}
		return tools, ttl, err
	})
}

// ListResources fetches every page of resources/list and refreshes the cache.
func (c *Client) ListResources(ctx context.Context) ([]Resource, error) {
	if c.init.Capabilities.Resources == nil {
		return nil, &NotSupportedError{"resources"}
	}
	return refresh(ctx, c, c.resources, func(ctx context.Context) ([]Resource, time.Duration, error) {
		return paginate(ctx, c, MethodResourcesList,
			func(r *ListResourcesResult) []Resource { return r.Resources },
			func(r *ListResourcesResult) string { return r.NextCursor })
	})
}

// ListPrompts fetches every page of prompts/list and refreshes the cache.
func (c *Client) ListPrompts(ctx context.Context) ([]Prompt, error) {
	if c.init.Capabilities.Prompts == nil {
		return nil, &NotSupportedError{"prompts"}
	}
	return refresh(ctx, c, c.prompts, func(ctx context.Context) ([]Prompt, time.Duration, error) {
		return paginate(ctx, c, MethodPromptsList,
			func(r *ListPromptsResult) []Prompt { return r.Prompts },
			func(r *ListPromptsResult) string { return r.NextCursor })
	})
}

// ListResourceTemplates fetches every page of resources/templates/list.
func (c *Client) ListResourceTemplates(ctx context.Context) ([]ResourceTemplate, error) {
	if c.init.Capabilities.Resources == nil {
		return nil, &NotSupportedError{"resources"}
	}
	return refresh(ctx, c, c.templates, func(ctx context.Context) ([]ResourceTemplate, time.Duration, error) {
		return paginate(ctx, c, MethodResourcesTemplatesList,
			func(r *ListResourceTemplatesResult) []ResourceTemplate { return r.ResourceTemplates },
			func(r *ListResourceTemplatesResult) string { return r.NextCursor })
	})
}

// ResourceTemplates returns the cached template list while it is fresh
// (a modern server's ttlMs), fetching it otherwise. A legacy server's
// templates are fetched every time: it announces no change to them.
func (c *Client) ResourceTemplates(ctx context.Context) ([]ResourceTemplate, error) {
	if items, ok := cachedItems(c, c.templates); ok && c.modern {
		return items, nil
	}
	return c.ListResourceTemplates(ctx)
}

// Tools returns the cached tool list, fetching it when it is stale.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	if items, ok := cachedItems(c, c.tools); ok {
		return items, nil
	}
	return c.ListTools(ctx)
}

// CachedTools returns the tool list if one is cached and fresh, without
// asking the server.
func (c *Client) CachedTools() ([]Tool, bool) { return cachedItems(c, c.tools) }

// ToolsVersion is Tools with the list's version: a number that changes
// whenever the list does, unique in the process, for caching what was
// decided about a tool as it was listed. 0 when the list could not be
// cached (a list_changed arrived while it was fetched).
func (c *Client) ToolsVersion(ctx context.Context) ([]Tool, uint64, error) {
	c.mu.Lock()
	items, ok, ver := c.tools.items, c.tools.fresh(), c.tools.ver
	c.mu.Unlock()
	if ok {
		return items, ver, nil
	}
	items, err := c.ListTools(ctx)
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tools.fresh() && sameSlice(c.tools.items, items) {
		return items, c.tools.ver, nil
	}
	return items, 0, nil
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Resources returns the cached resource list, fetching it when stale.
func (c *Client) Resources(ctx context.Context) ([]Resource, error) {
	if items, ok := cachedItems(c, c.resources); ok {
		return items, nil
	}
	return c.ListResources(ctx)
}

// Prompts returns the cached prompt list, fetching it when stale.
func (c *Client) Prompts(ctx context.Context) ([]Prompt, error) {
	if items, ok := cachedItems(c, c.prompts); ok {
		return items, nil
	}
	return c.ListPrompts(ctx)
}

func cachedItems[T any](c *Client, k *cached[T]) ([]T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return k.items, k.fresh()
}

// refresh fetches a list and stores it unless a list_changed arrived while
// the fetch was running (then the stored list would already be stale).
// ttl is the fetch's freshness: negative for none (legacy), else the
// time from now the list may be served from the cache.
func refresh[T any](ctx context.Context, c *Client, k *cached[T], fetch func(context.Context) ([]T, time.Duration, error)) ([]T, error) {
	c.mu.Lock()
	gen := k.gen
	c.mu.Unlock()
	items, ttl, err := fetch(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if k.gen == gen {
		k.items, k.valid, k.ver = items, true, listVersions.Add(1)
		k.expires = time.Time{}
		if ttl >= 0 {
			// Stale at once when 0: a modern server that gives no
			// freshness is asked again each time (the spec's default).
			k.expires = time.Now().Add(ttl)
		}
	}
	c.mu.Unlock()
	return items, nil
}

func invalidate[T any](c *Client, k *cached[T]) {
	c.mu.Lock()
	k.gen++
	k.valid = false
	c.mu.Unlock()
}

// ReadResource reads a resource by URI.
func (c *Client) ReadResource(ctx context.Context, uri string) (*ReadResourceResult, error) {
	return c.ReadResourceWith(ctx, uri, nil)
}

// ReadResourceWith is ReadResource with o: its Timeout, its Meta, a
// progress handler, and Wire, set as CallTool sets it (the result's bytes
// as received when encoding it again would say exactly that).
func (c *Client) ReadResourceWith(ctx context.Context, uri string, o *CallOptions) (*ReadResourceResult, error) {
	if c.init.Capabilities.Resources == nil {
		return nil, &NotSupportedError{"resources"}
	}
	params := struct {
		URI  string `json:"uri"`
		Meta Meta   `json:"_meta,omitempty"`
	}{URI: uri}
	var opts []CallOption
	params.Meta, opts = c.callOptions(o)
	var raw json.RawMessage
	var err error
	if c.modern {
		raw, err = c.rounds(ctx, MethodResourcesRead, func(in *InputParams) (json.RawMessage, error) {
			p := struct {
				URI  string `json:"uri"`
				Meta Meta   `json:"_meta"`
				InputParams
			}{URI: uri, Meta: c.metaFor(ctx, params.Meta)}
			if in != nil {
				p.InputParams = *in
			}
			return c.modernCall(ctx, MethodResourcesRead, &p, true, opts...)
		})
		var re *RPCError
		if errors.As(err, &re) && re.Code == CodeInvalidParams {
			// The stateless revision renumbered not-found to -32602;
			// callers (and legacy clients of a gateway) know -32002.
			err = &RPCError{Code: CodeResourceNotFound, Message: re.Message, Data: re.Data}
		}
	} else {
		raw, err = c.peer.CallRaw(ctx, MethodResourcesRead, &params, opts...)
	}
	if err != nil {
		return nil, err
	}
	return decodeReply(MethodResourcesRead, raw, o, func(r *ReadResourceResult, b []byte, d *dec) error {
		return decodeWhole(b, d, r.decodeAt)
	})
}

// Subscribe asks for notifications/resources/updated for uri. For a
// modern server the URI joins the subscriptions/listen stream's filter
// (the stream is reopened with it).
func (c *Client) Subscribe(ctx context.Context, uri string) error {
	if r := c.init.Capabilities.Resources; r == nil || !r.Subscribe {
		return &NotSupportedError{"resource subscriptions"}
	}
	if c.modern {
		return c.resubscribe(ctx, uri, true)
	}
	return c.peer.Call(ctx, MethodResourcesSubscribe, map[string]string{"uri": uri}, nil)
}

// Unsubscribe cancels a subscription made with Subscribe.
func (c *Client) Unsubscribe(ctx context.Context, uri string) error {
	if r := c.init.Capabilities.Resources; r == nil || !r.Subscribe {
		return &NotSupportedError{"resource subscriptions"}
	}
	if c.modern {
		return c.resubscribe(ctx, uri, false)
	}
	return c.peer.Call(ctx, MethodResourcesUnsubscribe, map[string]string{"uri": uri}, nil)
}

// maxSubscriptions bounds the URIs one change stream carries.
const maxSubscriptions = 1024

// listenAckWait bounds how long Subscribe waits for the server to
// acknowledge the change stream that carries the new subscription.
const listenAckWait = 10 * time.Second

// resubscribe changes the subscribed set and reopens the change stream
// with it, returning once the server acknowledged the new stream (as a
// legacy resources/subscribe returns once answered), so an update that
// follows is not lost.
func (c *Client) resubscribe(ctx context.Context, uri string, on bool) error {
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	if on && !c.subs[uri] && len(c.subs) >= maxSubscriptions {
		c.mu.Unlock()
		return fmt.Errorf("subscribing to %s: already subscribed to %d resources of this server, the most one stream carries", uri, maxSubscriptions)
	}
	changed := c.subs[uri] != on
	if on {
		c.subs[uri] = true
	} else {
		delete(c.subs, uri)
	}
	c.mu.Unlock()
	if !changed {
		return nil
	}
	ack := c.listen()
	if ack == nil {
		return nil
	}
	t := time.NewTimer(listenAckWait)
	defer t.Stop()
	select {
	case <-ack:
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		c.log.Warn("the server has not acknowledged the change stream; the subscription takes effect when it does", "uri", uri, "waited", listenAckWait)
	case <-c.peer.Done():
		return c.peer.Err()
	}
	return nil
}

// GetPrompt fetches a prompt filled with args.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) (*GetPromptResult, error) {
	return c.GetPromptWith(ctx, name, args, nil)
}

// GetPromptWith is GetPrompt with o: its Timeout and its Meta (a trace
// context a gateway continues, say), as ReadResourceWith takes them.
func (c *Client) GetPromptWith(ctx context.Context, name string, args map[string]string, o *CallOptions) (*GetPromptResult, error) {
	if c.init.Capabilities.Prompts == nil {
		return nil, &NotSupportedError{"prompts"}
	}
	params := struct {
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments,omitempty"`
		Meta      Meta              `json:"_meta,omitempty"`
	}{Name: name, Arguments: args}
	var opts []CallOption
	params.Meta, opts = c.callOptions(o)
	var res GetPromptResult
	if c.modern {
		raw, err := c.rounds(ctx, MethodPromptsGet, func(in *InputParams) (json.RawMessage, error) {
			p := struct {
				Name      string            `json:"name"`
				Arguments map[string]string `json:"arguments,omitempty"`
				Meta      Meta              `json:"_meta"`
				InputParams
			}{Name: name, Arguments: args, Meta: c.metaFor(ctx, params.Meta)}
			if in != nil {
				p.InputParams = *in
			}
			return c.modernCall(ctx, MethodPromptsGet, &p, true, opts...)
		})
		if err == nil {
			err = decodeRaw(MethodPromptsGet, raw, &res)
		}
		if err != nil {
			return nil, err
		}
		return &res, nil
	}
	if err := c.peer.Call(ctx, MethodPromptsGet, params, &res, opts...); err != nil {
		return nil, err
	}
	return &res, nil
}

// Complete asks for completions of a prompt or resource-template argument.
func (c *Client) Complete(ctx context.Context, p *CompleteParams) (*CompleteResult, error) {
	if c.init.Capabilities.Completions == nil {
		return nil, &NotSupportedError{"completions"}
	}
	var res CompleteResult
	if c.modern {
		q := struct {
			*CompleteParams
			Meta Meta `json:"_meta"`
		}{p, c.meta(nil)}
		raw, err := c.modernCall(ctx, MethodComplete, &q, true)
		if err == nil {
			err = decodeRaw(MethodComplete, raw, &res)
		}
		if err != nil {
			return nil, err
		}
		return &res, nil
	}
	if err := c.peer.Call(ctx, MethodComplete, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SetLogLevel asks the server to send log messages at level and above.
func (c *Client) SetLogLevel(ctx context.Context, level LoggingLevel) error {
	if c.init.Capabilities.Logging == nil {
		return &NotSupportedError{"logging"}
	}
	if level.Severity() < 0 {
		return fmt.Errorf("unknown log level %q; use one of %v", level, LoggingLevels)
	}
	if c.modern {
		// No logging/setLevel in the stateless revision: every request
		// from now on asks for logs at level in its _meta.
		c.mu.Lock()
		c.logLevel = level
		c.mu.Unlock()
		return nil
	}
	return c.peer.Call(ctx, MethodLoggingSetLevel, map[string]LoggingLevel{"level": level}, nil)
}

// RootsChanged tells the server the roots list changed.
func (c *Client) RootsChanged(ctx context.Context) error {
	if c.opts.Roots == nil || !c.opts.RootsListChanged {
		return errors.New("roots list_changed is not declared: set ClientOptions.Roots and RootsListChanged")
	}
	if c.modern {
		return nil // gone in the stateless revision: each request asks for roots afresh
	}
	return c.peer.Notify(ctx, NotificationRootsListChanged, nil)
}

// clientHandler serves what the server sends.
type clientHandler struct{ c *Client }

func (h clientHandler) HandleRequest(ctx context.Context, method string, params json.RawMessage) (any, error) {
	o := &h.c.opts
	switch method {
	case MethodRootsList:
		if o.Roots == nil {
			break
		}
		roots, err := o.Roots(ctx)
		if err != nil {
			return nil, err
		}
		if roots == nil {
			roots = []Root{}
		}
		return ListRootsResult{Roots: roots}, nil
	case MethodSamplingCreateMessage:
		if o.Sampling == nil {
			break
		}
		if o.Raw != nil {
			if _, err := rawMember(params, ""); err != nil {
				return nil, InvalidParams("sampling/createMessage: %v", err)
			}
			return o.Raw(ctx, method, params)
		}
		var p CreateMessageParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, InvalidParams("sampling/createMessage: %v", err)
		}
		return o.Sampling(ctx, &p)
	case MethodElicitationCreate:
		if o.Elicitation == nil {
			break
		}
		var p ElicitParams
		var err error
		if o.Raw != nil {
			// Only the mode: the rest goes on as it came.
			var raw json.RawMessage
			if raw, err = rawMember(params, "mode"); err == nil && raw != nil && string(raw) != "null" {
				p.Mode, err = wire.Unquote(raw)
			}
		} else {
			err = json.Unmarshal(params, &p)
		}
		if err != nil {
			return nil, InvalidParams("elicitation/create: %v", err)
		}
		switch p.Mode {
		case "", "form":
		case "url":
			if !o.ElicitationURL {
				return nil, InvalidParams("elicitation/create: this client did not declare URL mode")
			}
		default:
			return nil, InvalidParams("elicitation/create: unknown mode %q", p.Mode)
		}
		if o.Raw != nil {
			return o.Raw(ctx, method, params)
		}
		return o.Elicitation(ctx, &p)
	}
	return nil, MethodNotFound(method)
}

// rawMember is member name of params (nil if absent; "" looks for
// none), which the Peer validated: one pass over the object, no decoding,
// where a handler passes the params on as they came. Params that are not
// an object (or null) are an error.
func rawMember(params json.RawMessage, name string) (json.RawMessage, error) {
	i := wire.SkipWS(params, 0)
	if i == len(params) || string(params[i:]) == "null" {
		return nil, nil
	}
	if params[i] != '{' {
		return nil, errors.New("params must be an object")
	}
	var v json.RawMessage
	err := wire.ValidMembers(params[i:], func(k, val []byte) error {
		if name != "" && wire.KeyIs(k, name) {
			v = val
		}
		return nil
	})
	return v, err
}

func (h clientHandler) HandleNotification(ctx context.Context, method string, params json.RawMessage) {
	c := h.c
	select {
	case <-c.ready:
	default:
		// Before initialize completes the lists are not fetched yet, so a
		// list_changed has nothing to refresh; other notifications still pass.
		if strings.HasSuffix(method, "/list_changed") {
			return
		}
	}
	switch method {
	case NotificationSubscriptionsAcked:
		c.mu.Lock()
		if c.listenAck != nil {
			close(c.listenAck)
			c.listenAck = nil
		}
		c.mu.Unlock()
		return
	case NotificationMessage:
		if c.opts.OnLog != nil {
			var m LogMessage
			if m.decodeJSON(params) == nil {
				m.Call, m.Related = CallOf(ctx)
				c.opts.OnLog(m)
			}
		}
		return
	case NotificationToolsListChanged:
		invalidate(c, c.tools)
		go c.refreshChanged(ctx, "tools", func(ctx context.Context) error { _, err := c.ListTools(ctx); return err })
		return
	case NotificationResourcesListChanged:
		invalidate(c, c.resources)
		invalidate(c, c.templates)
		go c.refreshChanged(ctx, "resources", func(ctx context.Context) error { _, err := c.ListResources(ctx); return err })
		return
	case NotificationPromptsListChanged:
		invalidate(c, c.prompts)
		go c.refreshChanged(ctx, "prompts", func(ctx context.Context) error { _, err := c.ListPrompts(ctx); return err })
		return
	case NotificationResourceUpdated:
		if c.opts.OnResourceUpdated != nil {
			var n struct {
				URI string `json:"uri"`
			}
			if json.Unmarshal(params, &n) == nil {
				c.opts.OnResourceUpdated(n.URI)
			}
		}
		return
	}
	if c.opts.OnNotification != nil {
		c.opts.OnNotification(method, params)
	}
}

// refreshChanged refetches a list after list_changed, off the read loop
// (the fetch needs the read loop to deliver its responses).
// A burst of notifications costs at most one running and one queued fetch.
func (c *Client) refreshChanged(ctx context.Context, kind string, fetch func(context.Context) error) {
	c.mu.Lock()
	if c.refreshing == nil {
		c.refreshing = map[string]int{}
	}
	c.refreshing[kind]++
	if c.refreshing[kind] > 1 {
		c.refreshing[kind] = 2 // one more round after the running one
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	for {
		if err := fetch(ctx); err != nil {
			if ctx.Err() != nil || c.peer.Err() != nil || errors.Is(err, ErrClosed) {
				// The session is ending: the list no longer matters.
				c.log.Debug("refreshing list after list_changed stopped with the session", "kind", kind, "error", err)
			} else {
				c.log.Warn("refreshing list after list_changed failed", "kind", kind, "error", err)
			}
		}
		if c.opts.OnListChanged != nil {
			c.opts.OnListChanged(kind)
		}
		c.mu.Lock()
		c.refreshing[kind]--
		again := c.refreshing[kind] > 0
		c.mu.Unlock()
		if !again {
			return
		}
	}
}
