package gateway

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nexus-mcp/nexus/host/mcp"
)

// subscriptions/listen (MCP 2026-07-28): a modern client's stream of the
// changes it opted in to. What reaches it is what reaches the session's
// legacy notifications (listChanged, serverChanged, updated): the
// agent's own upstream connections, never another agent's.

// maxListenURIs bounds the resources one stream watches.
const maxListenURIs = 1024

// listener is one open subscriptions/listen stream.
type listener struct {
	s         *session
	ctx       context.Context // the listen request's: what is sent goes on its stream
	id        json.RawMessage // the request's id: the subscriptionId
	lists     map[string]bool // "tools", "resources", "prompts"
	resources map[string]string
	// acked is closed once the acknowledgment is sent: the listener is
	// registered before it (a change right after the client reads the
	// acknowledgment is not missed), and what it is sent waits for it
	// (the acknowledgment comes first on the stream).
	acked chan struct{}
}

// send sends a notification on the stream, tagged with its
// subscriptionId.
func (l *listener) send(method string, params map[string]any) {
	params["_meta"] = map[string]json.RawMessage{mcp.MetaSubscriptionID: l.id}
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	if method != mcp.NotificationSubscriptionsAcked {
		select {
		case <-l.acked:
		case <-ctx.Done():
			return
		}
	}
	if err := l.s.peer.Notify(ctx, method, params); err != nil {
		l.s.g.log.Debug("a subscriptions/listen notification was not sent", "method", method, "error", oneLine(err))
	}
}

// listening is the session's open streams. Called with s.mu held.
func (s *session) listening() []*listener {
	if len(s.listeners) == 0 {
		return nil
	}
	out := make([]*listener, 0, len(s.listeners))
	for l := range s.listeners {
		out = append(out, l)
	}
	return out
}

// listen serves subscriptions/listen: it acknowledges what it will send
// (resources it cannot find or subscribe to upstream are left out), then
// holds the request open, sending the opted-in notifications on it,
// until the client cancels it or the session ends.
func (s *session) listen(ctx context.Context, params json.RawMessage) (any, error) {
	var p mcp.SubscriptionsListenParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, mcp.InvalidParams("subscriptions/listen: params.notifications must be an object like {\"toolsListChanged\": true}: %v", err)
	}
	f := p.Notifications
	if len(f.ResourceSubscriptions) > maxListenURIs {
		return nil, mcp.InvalidParams("subscriptions/listen: %d resourceSubscriptions; one stream watches at most %d (open another)", len(f.ResourceSubscriptions), maxListenURIs)
	}
	id := mcp.RelatedRequest(ctx)
	if id == nil {
		return nil, &mcp.RPCError{Code: mcp.CodeInternalError, Message: "subscriptions/listen: the request has no id to tag its notifications with"}
	}
	l := &listener{s: s, ctx: ctx, id: id,
		lists:     map[string]bool{"tools": f.ToolsListChanged, "resources": f.ResourcesListChanged, "prompts": f.PromptsListChanged},
		resources: map[string]string{}, acked: make(chan struct{})}
	agreed := mcp.SubscriptionFilter{ToolsListChanged: f.ToolsListChanged, PromptsListChanged: f.PromptsListChanged, ResourcesListChanged: f.ResourcesListChanged}
	for _, uri := range f.ResourceSubscriptions {
		if _, dup := l.resources[uri]; dup || uri == "" {
			continue
		}
		server, err := s.route(ctx, uri)
		if err == nil {
			// On the agent's shared connection the subscription stays
			// once made: others may hold it (see subscribe).
			err = s.host().Subscribe(ctx, s.agent, server, uri)
		}
		if err != nil {
			s.g.log.Debug("subscriptions/listen leaves out a resource", "uri", uri, "error", oneLine(err))
			continue
		}
		l.resources[uri] = server
		agreed.ResourceSubscriptions = append(agreed.ResourceSubscriptions, uri)
	}
	s.mu.Lock()
	if s.listeners == nil {
		s.listeners = map[*listener]struct{}{}
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	l.send(mcp.NotificationSubscriptionsAcked, map[string]any{"notifications": agreed})
	close(l.acked)
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.ctx.Done():
		// The session ends: a graceful end of the subscription.
		return map[string]any{"resultType": mcp.ResultComplete, "_meta": map[string]json.RawMessage{mcp.MetaSubscriptionID: id}}, nil
	}
}
