package config

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// The gateway block (nexus serve), the server prefix and agent tokens.

var (
	gatewaySchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "listen"}, {Name: "public_url"}, {Name: "allowed_origins"}, {Name: "allowed_hosts"}, {Name: "required_servers"}, {Name: "metrics"}, {Name: "session_store"}, {Name: "state_key"}, {Name: "list_wait"}, {Name: "cache_ttl"}, {Name: "input_ttl"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "tls"}, {Type: "limits"}, {Type: "oauth"}},
	}
	gatewayTLSSchema    = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "cert"}, {Name: "key"}}}
	gatewayLimitsSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "max_body_bytes"}, {Name: "max_sessions"}, {Name: "max_requests"}, {Name: "max_requests_per_session"},
		{Name: "max_sse_events"}, {Name: "session_idle_timeout"}, {Name: "shutdown_grace"},
		{Name: "body_timeout"}, {Name: "min_body_rate"}, {Name: "drain_timeout"},
		{Name: "max_sessions_per_agent"}, {Name: "max_requests_per_agent"}, {Name: "max_inflight_bytes"},
		{Name: "max_inflight_bytes_per_agent"}, {Name: "max_upstream_sessions_per_agent"},
		{Name: "max_bridged_upstreams"}, {Name: "max_bridged_upstreams_per_agent"},
	}}
	gatewayOAuthSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "issuer", Required: true}, {Name: "jwks_url"}, {Name: "audience"}, {Name: "scopes"}, {Name: "agent_claim"}, {Name: "agents"},
	}}
)

// gateway decodes a gateway block.
func (h *hclFile) gateway(b *hcl.Block) {
	c, ok := h.content(b, gatewaySchema)
	if !ok {
		return
	}
	g := &Gateway{Source: h.blockSource(b)}
	errsBefore := len(h.errs)
	at := c.Attributes
	if a := at["listen"]; a != nil {
		if g.Listen, ok = h.str(a, nil, ""); ok {
			if p := checkListen(g.Listen); p != "" {
				h.errRange(a.Expr.Range(), "", p, `Use host:port, for example listen = "127.0.0.1:8750" (loopback; "0.0.0.0:8750" serves every interface).`)
			}
		}
	}
	if a := at["metrics"]; a != nil {
		if g.Metrics, ok = h.str(a, nil, ""); ok {
			if p := checkListen(g.Metrics); p != "" {
				h.errRange(a.Expr.Range(), "", strings.Replace(p, "listen", "metrics", 1), `Use host:port, for example metrics = "127.0.0.1:9464" (Prometheus scrapes http://127.0.0.1:9464/metrics).`)
			}
		}
	}
	if a := at["public_url"]; a != nil {
		if g.PublicURL, ok = h.str(a, nil, ""); ok {
			if p := checkPublicURL(g.PublicURL); p != "" {
				h.errRange(a.Expr.Range(), "", p, `Use the URL clients reach the MCP endpoint at, for example "https://nexus.example.com/mcp".`)
			}
		}
	}
	if a := at["allowed_origins"]; a != nil {
		if g.AllowedOrigins, ok = h.strs(a, nil, ""); ok {
			for _, o := range g.AllowedOrigins {
				if p := checkOrigin(o); p != "" {
					h.errRange(a.Expr.Range(), "", p, `An origin is scheme://host[:port] with no path, for example "https://app.example.com".`)
				}
			}
		}
	}
	if a := at["allowed_hosts"]; a != nil {
		if g.AllowedHosts, ok = h.strs(a, nil, ""); ok {
			for _, o := range g.AllowedHosts {
				if p := checkHost(o); p != "" {
					h.errRange(a.Expr.Range(), "", p, allowedHostsFix)
				}
			}
		}
	}
	if a := at["session_store"]; a != nil {
		refs := map[string]Template{}
		if g.SessionStore, ok = h.str(a, refs, "/session_store"); ok {
			if p := checkSessionStore(g.SessionStore); p != "" {
				h.errRange(a.Expr.Range(), "", p, sessionStoreFix)
			}
		}
		if len(refs) > 0 {
			g.Refs = refs
		}
	}
	if a := at["state_key"]; a != nil {
		refs := map[string]Template{}
		if g.StateKey, ok = h.str(a, refs, "/state_key"); ok {
			switch p, isErr := checkStateKey(g.StateKey, len(refs) > 0, h.ld.opts.AllowUnset); {
			case p == "":
			case isErr:
				h.errRange(a.Expr.Range(), "", p, stateKeyFix)
			default:
				h.warnRange(a.Expr.Range(), "gateway", "%s", p)
			}
		}
		if len(refs) > 0 {
			if g.Refs == nil {
				g.Refs = map[string]Template{}
			}
			for k, v := range refs {
				g.Refs[k] = v
			}
		}
	}
	if a := at["list_wait"]; a != nil {
		g.ListWait, _ = h.duration(a)
	}
	if a := at["cache_ttl"]; a != nil {
		g.CacheTTL, _ = h.duration(a)
	}
	if a := at["input_ttl"]; a != nil {
		g.InputTTL, _ = h.duration(a)
	}
	if a := at["required_servers"]; a != nil {
		if g.RequiredServers, ok = h.strs(a, nil, ""); ok {
			g.requiredAt = h.elementSites(a, len(g.RequiredServers))
		}
	}
	seen := map[string]bool{}
	for _, blk := range c.Blocks {
		if seen[blk.Type] {
			h.errRange(blk.DefRange, "", fmt.Sprintf("a gateway block has at most one %s block", blk.Type))
			continue
		}
		seen[blk.Type] = true
		switch blk.Type {
		case "tls":
			if tc, ok := h.content(blk, gatewayTLSSchema); ok {
				cert, key := tc.Attributes["cert"], tc.Attributes["key"]
				if cert != nil {
					g.TLSCert, _ = h.path(cert)
				}
				if key != nil {
					g.TLSKey, _ = h.path(key)
				}
				if cert == nil || key == nil {
					missing := "key"
					if cert == nil {
						missing = "cert"
					}
					h.errRange(blk.DefRange, "", fmt.Sprintf("tls needs both cert and key; %s is missing", missing),
						"tls {\n  cert = \"certs/gateway.pem\"      # the certificate chain, PEM\n  key  = \"certs/gateway-key.pem\"  # its private key, PEM\n}")
				}
			}
		case "limits":
			h.gatewayLimits(blk, &g.Limits)
		case "oauth":
			g.OAuth, g.agentsAt = h.gatewayOAuth(blk)
		}
	}
	if len(h.errs) > errsBefore {
		return
	}
	h.out.gateway = g
}

func (h *hclFile) gatewayLimits(b *hcl.Block, l *GatewayLimits) {
	c, ok := h.content(b, gatewayLimitsSchema)
	if !ok {
		return
	}
	// Zero is each limit's default, as leaving it out is.
	for name, a := range c.Attributes {
		switch name {
		case "max_body_bytes":
			l.MaxBodyBytes, _ = h.integer(a, 0)
		case "max_sessions":
			l.MaxSessions, _ = h.integer(a, 0)
		case "max_requests":
			l.MaxRequests, _ = h.integer(a, 0)
		case "max_requests_per_session":
			l.MaxRequestsPerSession, _ = h.integer(a, 0)
		case "max_sse_events":
			l.MaxSSEEvents, _ = h.integer(a, 0)
		case "session_idle_timeout":
			l.SessionIdleTimeout, _ = h.durationOrZero(a)
		case "shutdown_grace":
			l.ShutdownGrace, _ = h.durationOrZero(a)
		case "body_timeout":
			l.BodyTimeout, _ = h.durationOrZero(a)
		case "min_body_rate":
			l.MinBodyRate, _ = h.integer(a, 0)
		case "drain_timeout":
			l.DrainTimeout, _ = h.durationOrZero(a)
		default:
			if p := l.intField(name); p != nil {
				*p, _ = h.integer(a, 0)
			}
		}
	}
	for _, p := range l.problems() {
		rng := b.DefRange
		if a := c.Attributes[p[0]]; a != nil {
			rng = a.Expr.Range()
		}
		h.errRange(rng, "", p[1], p[2])
	}
}

// intField is the whole-number limit a key names among those added for
// per-agent quotas, or nil.
func (l *GatewayLimits) intField(key string) *int {
	switch key {
	case "max_sessions_per_agent":
		return &l.MaxSessionsPerAgent
	case "max_requests_per_agent":
		return &l.MaxRequestsPerAgent
	case "max_inflight_bytes":
		return &l.MaxInflightBytes
	case "max_inflight_bytes_per_agent":
		return &l.MaxInflightBytesPerAgent
	case "max_upstream_sessions_per_agent":
		return &l.MaxUpstreamSessionsPerAgent
	case "max_bridged_upstreams":
		return &l.MaxBridgedUpstreams
	case "max_bridged_upstreams_per_agent":
		return &l.MaxBridgedUpstreamsPerAgent
	}
	return nil
}

// quotaKeys are the keys intField knows.
var quotaKeys = []string{"max_sessions_per_agent", "max_requests_per_agent", "max_inflight_bytes", "max_inflight_bytes_per_agent", "max_upstream_sessions_per_agent",
	"max_bridged_upstreams", "max_bridged_upstreams_per_agent"}

// durationOrZero is duration that also takes 0 (a limit's default).
func (h *hclFile) durationOrZero(a *hcl.Attribute) (time.Duration, bool) {
	v, ok := h.plain(a, cty.DynamicPseudoType)
	if !ok {
		return 0, false
	}
	if isZero(v) {
		return 0, true
	}
	return h.duration(a)
}

func isZero(v cty.Value) bool {
	switch v.Type() {
	case cty.Number:
		return v.AsBigFloat().Sign() == 0
	case cty.String:
		return isZeroDuration(v.AsString())
	}
	return false
}

func isZeroDuration(s string) bool {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f == 0
	}
	d, err := time.ParseDuration(s)
	return err == nil && d == 0
}

// elementSites is where each of the n elements of a list attribute was
// written; the attribute itself where they cannot be told apart (a list
// from a variable or a function).
func (h *hclFile) elementSites(a *hcl.Attribute, n int) []*site {
	out := make([]*site, n)
	exprs, diags := hcl.ExprList(a.Expr)
	for i := range out {
		if !diags.HasErrors() && len(exprs) == n {
			out[i] = h.site(exprs[i].Range())
		} else {
			out[i] = h.site(a.Expr.Range())
		}
	}
	return out
}

func (h *hclFile) gatewayOAuth(b *hcl.Block) (*GatewayOAuth, map[string]*site) {
	c, ok := h.content(b, gatewayOAuthSchema)
	if !ok {
		return nil, nil
	}
	o := &GatewayOAuth{AgentClaim: "sub"}
	at := c.Attributes
	if o.Issuer, ok = h.str(at["issuer"], nil, ""); ok {
		if p := option.CheckURL("issuer", o.Issuer, true); p != "" {
			h.errRange(at["issuer"].Expr.Range(), "", p, `Use the authorization server's issuer URL, for example "https://login.example.com".`)
		}
	}
	if a := at["jwks_url"]; a != nil {
		if o.JWKSURL, ok = h.str(a, nil, ""); ok {
			if p := option.CheckURL("jwks_url", o.JWKSURL, true); p != "" {
				h.errRange(a.Expr.Range(), "", p)
			}
		}
	}
	if a := at["audience"]; a != nil {
		o.Audience, _ = h.str(a, nil, "")
	}
	if a := at["scopes"]; a != nil {
		o.Scopes, _ = h.strs(a, nil, "")
	}
	if a := at["agent_claim"]; a != nil {
		if o.AgentClaim, ok = h.str(a, nil, ""); ok && o.AgentClaim == "" {
			h.errRange(a.Expr.Range(), "", `agent_claim is empty`, `Name the token claim that picks the agent, for example agent_claim = "sub" (the default) or "email".`)
		}
	}
	var sites map[string]*site
	if a := at["agents"]; a != nil {
		if v, ok := h.plain(a, cty.Map(cty.String)); ok {
			o.Agents = map[string]string{}
			sites = map[string]*site{}
			for k, e := range v.AsValueMap() {
				o.Agents[k] = e.AsString()
				sites[k] = h.site(a.Expr.Range())
			}
			// Point at each value where the map is written out.
			if pairs, diags := hcl.ExprMap(a.Expr); !diags.HasErrors() {
				for _, p := range pairs {
					if k, diags := p.Key.Value(nil); !diags.HasErrors() && k.Type() == cty.String && k.IsKnown() && !k.IsNull() {
						if _, has := sites[k.AsString()]; has {
							sites[k.AsString()] = h.site(p.Value.Range())
						}
					}
				}
			}
		}
	}
	return o, sites
}

// checkListen says what is wrong with a listen address, or "".
func checkListen(s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Sprintf("listen %q is not host:port (%v)", s, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("listen %q: the port must be a number from 0 to 65535", s)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Sprintf("listen %q: %q is not a host", s, host)
	}
	return ""
}

// checkPublicURL says what is wrong with the gateway's public URL, or "":
// it is the OAuth resource identifier, which has no fragment (RFC 8707),
// and clients are given it, so it carries no credentials.
func checkPublicURL(s string) string {
	if p := option.CheckURL("public_url", s, false); p != "" {
		return p
	}
	u, _ := url.Parse(s)
	switch {
	case u.User != nil:
		return fmt.Sprintf("public_url %q holds a user name or password; it is given to every client, so it must not", s)
	case u.Fragment != "" || strings.HasSuffix(s, "#"):
		return fmt.Sprintf("public_url %q has a fragment (#...); a resource URL has none (RFC 8707)", s)
	}
	return ""
}

// checkOrigin says what is wrong with a browser origin, or "".
func checkOrigin(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return fmt.Sprintf("allowed origin %q is not scheme://host[:port]", s)
	}
	return ""
}

// checkPrefix says what is wrong with a server's name prefix, or "".
func checkPrefix(p string) string {
	if len(p) > 32 {
		return fmt.Sprintf("prefix %q is longer than 32 characters; exposed names are at most 64", p)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return fmt.Sprintf("prefix %q may hold only letters, digits, '_' and '-' (what LLM providers accept in a tool name)", p)
		}
	}
	return ""
}

// checkGateway validates the merged gateway block against the rest of
// the config.
func checkGateway(cfg *Config, bad func(src diag.Source, lines []string, problem string, fix ...string)) {
	g := cfg.Gateway
	if g == nil {
		return
	}
	at := func(s *site) (diag.Source, []string) {
		if s == nil {
			return g.Source, nil
		}
		return s.src, s.lines
	}
	for i, s := range g.RequiredServers {
		var where *site
		if i < len(g.requiredAt) {
			where = g.requiredAt[i]
		}
		src, lines := at(where)
		switch srv := cfg.Server(s); {
		case srv == nil:
			bad(src, lines, fmt.Sprintf("the gateway's required_servers names server %q, which is not configured in any layer.%s", s, didYouMean(s, cfg.Names())),
				"Fix the name, or add the server; /readyz reports ready only when every required server is reachable.")
		case !srv.Enabled:
			bad(src, lines, fmt.Sprintf("the gateway's required_servers names server %q, which is disabled (%s), so the gateway would never be ready", s, srv.Source),
				"Enable the server, or take it out of required_servers.")
		}
	}
	if g.OAuth != nil {
		var names []string
		for _, a := range cfg.Agents {
			names = append(names, a.Name)
		}
		for _, claim := range sortedKeys(g.OAuth.Agents) {
			agent := g.OAuth.Agents[claim]
			if cfg.Agent(agent) == nil {
				src, lines := at(g.agentsAt[claim])
				bad(src, lines, fmt.Sprintf("the gateway's oauth agents map %q to agent %q, which is not configured in any layer.%s", claim, agent, didYouMean(agent, names)),
					fmt.Sprintf("Add it: agent %q { permission = \"sandboxed\" }, or map %q to an agent that exists.", agent, claim))
			}
		}
	}
}

// checkTokens refuses a token that acts as two agents: whichever the
// gateway matched first would win.
func checkTokens(cfg *Config, bad func(src diag.Source, lines []string, problem string, fix ...string)) {
	type owner struct {
		agent string
		i     int
	}
	seen := map[string]owner{}
	for _, a := range cfg.Agents {
		for i, t := range a.Tokens {
			if t == "" {
				continue // unset, for show and compile
			}
			if o, dup := seen[t]; dup && o.agent != a.Name {
				bad(a.Source, nil, fmt.Sprintf("agent %q's token %d is also agent %q's token %d: a token must identify one agent", a.Name, i+1, o.agent, o.i+1),
					"Give each agent its own token (for example: openssl rand -hex 32).")
				continue
			}
			seen[t] = owner{a.Name, i}
		}
	}
}

const sessionStoreFix = `Use "memory" (one process) or redis://host:6379 (rediss:// for TLS); put a password in a sensitive variable: session_store = "redis://:${var.redis_password}@redis:6379"`

// StateKeyEnv names the environment variable `nexus serve` reads the
// requestState key from when the config sets no state_key.
const StateKeyEnv = "NEXUS_STATE_KEY"

const stateKeyFix = `Make a key with openssl rand -hex 32, keep it in a sensitive variable shared by the replicas, and write state_key = var.state_key in the gateway block.`

// ParseStateKey reads a requestState key: 32 bytes written as 64 hex
// digits or in base64 (standard or URL alphabet, padded or not).
func ParseStateKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("the requestState key is not 32 bytes written as 64 hex digits or in base64 (%d characters given; the key itself is not shown)", len(s))
}

// checkStateKey says what is wrong with a state_key: not a key (an
// error), or written in the file (a warning). The key is never shown.
func checkStateKey(s string, fromRef, allowUnset bool) (problem string, isErr bool) {
	if s == "" && fromRef && allowUnset {
		return "", false
	}
	if _, err := ParseStateKey(s); err != nil {
		return "state_key: " + err.Error(), true
	}
	if !fromRef {
		return "state_key is written in the config file; put it in a sensitive variable (state_key = var.state_key) so the file can be shared and compiled configs never hold it", false
	}
	return "", false
}

// checkSessionStore says what is wrong with a session store URL.
func checkSessionStore(s string) string {
	switch {
	case s == "" || s == "memory":
		return ""
	case strings.HasPrefix(s, "redis://"), strings.HasPrefix(s, "rediss://"), strings.HasPrefix(s, "unix://"):
		u, err := url.Parse(s)
		if err != nil {
			// url.Error repeats the URL, password and all: say only why.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return fmt.Sprintf("session_store is not a URL: %v", err)
		}
		if u.Scheme != "unix" && u.Host == "" {
			return "session_store names no host"
		}
		return ""
	}
	return fmt.Sprintf("session_store %q is not a store this Nexus knows", maskCredential("/session_store", s))
}

// allowedHostsFix says what allowed_hosts takes.
const allowedHostsFix = `A host is a name or an IP address, with a port or without (then any port): allowed_hosts = ["nexus.example.com", "10.0.0.5:8750"].`

// checkHost says what is wrong with an allowed_hosts entry, or "".
func checkHost(s string) string {
	if strings.Contains(s, "/") {
		return fmt.Sprintf("allowed_hosts entry %q is a URL or has a path; give the host alone, with its port or without", s)
	}
	h := s
	if host, port, err := net.SplitHostPort(s); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Sprintf("allowed_hosts entry %q has a port that is not a number", s)
		}
		h = host
	}
	if _, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return ""
	}
	if h == "" || strings.ContainsAny(h, "/@?#:[] ") {
		return fmt.Sprintf("allowed_hosts entry %q is not a host name or address", s)
	}
	return ""
}

// The same in the nexus-json dialect: "gateway" at the top level.
var (
	gatewayKeys        = []string{"listen", "public_url", "allowed_origins", "allowed_hosts", "required_servers", "metrics", "session_store", "state_key", "list_wait", "cache_ttl", "input_ttl", "tls", "limits", "oauth"}
	gatewayTLSKeys     = []string{"cert", "key"}
	gatewayLimitKeys   = append([]string{"max_body_bytes", "max_sessions", "max_requests", "max_requests_per_session", "max_sse_events", "session_idle_timeout", "shutdown_grace", "body_timeout", "min_body_rate", "drain_timeout"}, quotaKeys...)
	gatewayOAuthKeys   = []string{"issuer", "jwks_url", "audience", "scopes", "agent_claim", "agents"}
	gatewayJSONExample = `{"listen": "127.0.0.1:8750"}`
)

func (j *jsonFile) gateway(v *jval) {
	d := &dec{j: j, who: "", what: "gateway"}
	if v.kind != '{' {
		d.typeErr(v, "gateway", "an object", gatewayJSONExample)
		return
	}
	if !d.keys(v, "gateway", gatewayKeys) {
		return
	}
	g := &Gateway{Source: j.at(v.off)}
	before := len(j.errs)
	for _, m := range v.obj {
		val := m.val
		switch m.key {
		case "listen":
			if s, ok := d.str(val, m.key, ""); ok {
				if p := checkListen(s); p != "" {
					d.errAt(val, p, `Use host:port, for example "127.0.0.1:8750".`)
				}
				g.Listen = s
			}
		case "session_store":
			if s, ok := d.str(val, m.key, "/session_store"); ok {
				if p := checkSessionStore(s); p != "" {
					d.errAt(val, p, sessionStoreFix)
				}
				g.SessionStore = s
			}
		case "state_key":
			if s, ok := d.str(val, m.key, "/state_key"); ok {
				_, fromRef := d.refs["/state_key"]
				switch p, isErr := checkStateKey(s, fromRef, j.ld.opts.AllowUnset); {
				case p == "":
				case isErr:
					d.errAt(val, p, stateKeyFix)
				default:
					j.warnAt(val.off, "gateway", "%s", p)
				}
				g.StateKey = s
			}
		case "metrics":
			if s, ok := d.str(val, m.key, ""); ok {
				if p := checkListen(s); p != "" {
					d.errAt(val, strings.Replace(p, "listen", "metrics", 1), `Use host:port, for example "127.0.0.1:9464".`)
				}
				g.Metrics = s
			}
		case "public_url":
			if s, ok := d.str(val, m.key, ""); ok {
				if p := checkPublicURL(s); p != "" {
					d.errAt(val, p, `Use the URL clients reach the MCP endpoint at, for example "https://nexus.example.com/mcp".`)
				}
				g.PublicURL = s
			}
		case "allowed_origins":
			if list, ok := d.strs(val, m.key, ""); ok {
				for _, o := range list {
					if p := checkOrigin(o); p != "" {
						d.errAt(val, p, `An origin is scheme://host[:port] with no path, for example "https://app.example.com".`)
					}
				}
				g.AllowedOrigins = list
			}
		case "allowed_hosts":
			if list, ok := d.strs(val, m.key, ""); ok {
				for _, o := range list {
					if p := checkHost(o); p != "" {
						d.errAt(val, p, allowedHostsFix)
					}
				}
				g.AllowedHosts = list
			}
		case "list_wait":
			g.ListWait, _ = d.duration(val, m.key)
		case "cache_ttl":
			g.CacheTTL, _ = d.duration(val, m.key)
		case "input_ttl":
			g.InputTTL, _ = d.duration(val, m.key)
		case "required_servers":
			var ok bool
			if g.RequiredServers, ok = d.strs(val, m.key, ""); ok {
				for _, e := range val.arr {
					g.requiredAt = append(g.requiredAt, j.site(e.off, len(e.str)+2))
				}
			}
		case "tls":
			if val.kind != '{' || !d.keys(val, "tls", gatewayTLSKeys) {
				if val.kind != '{' {
					d.typeErr(val, "tls", "an object", `{"cert": "gw.pem", "key": "gw-key.pem"}`)
				}
				continue
			}
			for _, t := range val.obj {
				if p, ok := d.str(t.val, t.key, ""); ok {
					p, _ = j.path(d, t.val, t.key, p)
					if t.key == "cert" {
						g.TLSCert = p
					} else {
						g.TLSKey = p
					}
				}
			}
			if val.get("cert") == nil || val.get("key") == nil {
				missing := "key"
				if val.get("cert") == nil {
					missing = "cert"
				}
				d.errAt(val, fmt.Sprintf("tls needs both cert and key; %s is missing", missing), `"tls": {"cert": "certs/gateway.pem", "key": "certs/gateway-key.pem"}`)
			}
		case "limits":
			if val.kind != '{' {
				d.typeErr(val, "limits", "an object", `{"max_sessions": 1000}`)
				continue
			}
			if !d.keys(val, "limits", gatewayLimitKeys) {
				continue
			}
			l := &g.Limits
			for _, e := range val.obj {
				switch e.key {
				case "max_body_bytes":
					l.MaxBodyBytes, _ = d.integer(e.val, e.key, 0)
				case "max_sessions":
					l.MaxSessions, _ = d.integer(e.val, e.key, 0)
				case "max_requests":
					l.MaxRequests, _ = d.integer(e.val, e.key, 0)
				case "max_requests_per_session":
					l.MaxRequestsPerSession, _ = d.integer(e.val, e.key, 0)
				case "max_sse_events":
					l.MaxSSEEvents, _ = d.integer(e.val, e.key, 0)
				case "session_idle_timeout":
					l.SessionIdleTimeout, _ = d.durationOrZero(e.val, e.key)
				case "shutdown_grace":
					l.ShutdownGrace, _ = d.durationOrZero(e.val, e.key)
				case "body_timeout":
					l.BodyTimeout, _ = d.durationOrZero(e.val, e.key)
				case "min_body_rate":
					l.MinBodyRate, _ = d.integer(e.val, e.key, 0)
				case "drain_timeout":
					l.DrainTimeout, _ = d.durationOrZero(e.val, e.key)
				default:
					if p := l.intField(e.key); p != nil {
						*p, _ = d.integer(e.val, e.key, 0)
					}
				}
			}
			for _, p := range l.problems() {
				at := val
				if v := val.get(p[0]); v != nil {
					at = v
				}
				d.errAt(at, p[1], p[2])
			}
		case "oauth":
			if val.kind != '{' {
				d.typeErr(val, "oauth", "an object", `{"issuer": "https://login.example.com"}`)
				continue
			}
			if !d.keys(val, "oauth", gatewayOAuthKeys) {
				continue
			}
			o := &GatewayOAuth{AgentClaim: "sub"}
			for _, e := range val.obj {
				switch e.key {
				case "issuer", "jwks_url":
					if s, ok := d.str(e.val, e.key, ""); ok {
						if p := option.CheckURL(e.key, s, true); p != "" {
							d.errAt(e.val, p)
						}
						if e.key == "issuer" {
							o.Issuer = s
						} else {
							o.JWKSURL = s
						}
					}
				case "audience":
					o.Audience, _ = d.str(e.val, e.key, "")
				case "agent_claim":
					var ok bool
					if o.AgentClaim, ok = d.str(e.val, e.key, ""); ok && o.AgentClaim == "" {
						d.errAt(e.val, `agent_claim is empty`, `Name the token claim that picks the agent, for example "agent_claim": "sub" (the default) or "email".`)
					}
				case "scopes":
					o.Scopes, _ = d.strs(e.val, e.key, "")
				case "agents":
					if e.val.kind != '{' {
						d.typeErr(e.val, "agents", "an object of agent names by claim value", `{"alice@example.com": "claude", "*": "readonly"}`)
						continue
					}
					o.Agents = map[string]string{}
					g.agentsAt = map[string]*site{}
					for _, m := range e.val.obj {
						if agent, ok := d.str(m.val, "agents."+m.key, ""); ok {
							o.Agents[m.key] = agent
							g.agentsAt[m.key] = j.site(m.val.off, len(m.val.str)+2)
						}
					}
				}
			}
			if o.Issuer == "" {
				d.errAt(val, `the gateway's oauth needs an "issuer"`)
			}
			g.OAuth = o
		}
	}
	if len(j.errs) > before {
		return
	}
	if len(d.refs) > 0 {
		g.Refs = d.refs
	}
	j.out.gateway = g
}

// durationOrZero is duration that also takes 0 (a limit's default).
func (d *dec) durationOrZero(v *jval, field string) (time.Duration, bool) {
	if (v.kind == '0' || v.kind == '"') && isZeroDuration(v.str) {
		return 0, true
	}
	return d.duration(v, field)
}

// gatewayJSON is the gateway block in the nexus-json form.
func gatewayJSON(g *Gateway) map[string]any {
	e := map[string]any{}
	set := func(k, v string) {
		if v != "" {
			e[k] = v
		}
	}
	set("listen", g.Listen)
	set("metrics", g.Metrics)
	set("public_url", g.PublicURL)
	putList(e, "allowed_origins", g.AllowedOrigins)
	putList(e, "allowed_hosts", g.AllowedHosts)
	putList(e, "required_servers", g.RequiredServers)
	if g.ListWait > 0 {
		e["list_wait"] = g.ListWait.String()
	}
	if g.CacheTTL > 0 {
		e["cache_ttl"] = g.CacheTTL.String()
	}
	if g.InputTTL > 0 {
		e["input_ttl"] = g.InputTTL.String()
	}
	if g.TLSCert != "" {
		e["tls"] = map[string]any{"cert": g.TLSCert, "key": g.TLSKey}
	}
	l := map[string]any{}
	for k, n := range map[string]int{"max_body_bytes": g.Limits.MaxBodyBytes, "max_sessions": g.Limits.MaxSessions, "max_requests": g.Limits.MaxRequests,
		"max_requests_per_session": g.Limits.MaxRequestsPerSession, "max_sse_events": g.Limits.MaxSSEEvents, "min_body_rate": g.Limits.MinBodyRate} {
		if n > 0 {
			l[k] = n
		}
	}
	for _, k := range quotaKeys {
		if n := *g.Limits.intField(k); n > 0 {
			l[k] = n
		}
	}
	if d := g.Limits.SessionIdleTimeout; d > 0 {
		l["session_idle_timeout"] = d.String()
	}
	if d := g.Limits.ShutdownGrace; d > 0 {
		l["shutdown_grace"] = d.String()
	}
	if d := g.Limits.BodyTimeout; d > 0 {
		l["body_timeout"] = d.String()
	}
	if d := g.Limits.DrainTimeout; d > 0 {
		l["drain_timeout"] = d.String()
	}
	if len(l) > 0 {
		e["limits"] = l
	}
	if o := g.OAuth; o != nil {
		oe := map[string]any{"issuer": o.Issuer, "agent_claim": o.AgentClaim}
		if o.JWKSURL != "" {
			oe["jwks_url"] = o.JWKSURL
		}
		if o.Audience != "" {
			oe["audience"] = o.Audience
		}
		putList(oe, "scopes", o.Scopes)
		if len(o.Agents) > 0 {
			oe["agents"] = o.Agents
		}
		e["oauth"] = oe
	}
	return e
}

// ViaGateway is a client config (format mcpservers or vscode) whose only
// server is Nexus's gateway, named "nexus": `nexus serve --agent agent`
// over stdio (with --config for each of configFiles, absolute, so the
// client's Nexus loads the same config), or, with url, the gateway's
// streamable HTTP endpoint with a bearer token the client fills in
// ($NEXUS_TOKEN; VS Code asks for it as a password input). Exactly one of
// agent and url is set. The warnings say what the client's side needs.
func ViaGateway(cfg *Config, format, agent, rawURL string, configFiles []string) ([]byte, []Warning, error) {
	switch {
	case format != FormatMCPServers && format != FormatVSCode:
		return nil, nil, fmt.Errorf("--via-gateway writes a client config: use --format %s or %s, not %q", FormatMCPServers, FormatVSCode, format)
	case agent == "" && rawURL == "":
		return nil, nil, fmt.Errorf("--via-gateway needs --agent NAME (the client starts nexus serve over stdio) or --url URL (the client connects to a running gateway)")
	case agent != "" && rawURL != "":
		return nil, nil, fmt.Errorf("--via-gateway takes one of --agent NAME (the client starts nexus serve over stdio) and --url URL (the client connects to a running gateway), not both")
	}
	var (
		server map[string]any
		warns  []Warning
	)
	if agent != "" {
		if cfg.Agent(agent) == nil {
			var names []string
			for _, a := range cfg.Agents {
				names = append(names, a.Name)
			}
			return nil, nil, fmt.Errorf("agent %q is not configured.%s Add an agent %q block first: the gateway serves each client as one agent", agent, didYouMean(agent, names), agent)
		}
		args := []any{"serve", "--agent", agent}
		for _, f := range configFiles {
			args = append(args, "--config", f)
		}
		server = map[string]any{"command": "nexus", "args": args}
		if format == FormatVSCode {
			server["type"] = "stdio"
		}
		if len(configFiles) == 0 {
			warns = append(warns, Warning{Message: "no --config was given, so the client's nexus serve finds its configuration from the directory the client starts it in, which may not be this one; pass --config FILE to name it"})
		}
	} else {
		if p := option.CheckURL("--url", rawURL, false); p != "" {
			return nil, nil, fmt.Errorf("%s; give the gateway's MCP endpoint, for example https://nexus.example.com/mcp", p)
		}
		u, _ := url.Parse(rawURL)
		if u.User != nil || u.RawQuery != "" && diag.MaskURLs(rawURL) != rawURL {
			return nil, nil, fmt.Errorf("--url %q holds a credential; the client sends its token in the Authorization header, so give the URL without it", diag.MaskURLs(rawURL))
		}
		if u.Scheme == "http" && !option.Loopback(u.Hostname()) {
			warns = append(warns, Warning{Message: fmt.Sprintf("--url %s is plain http to a host that is not loopback: the client's token would cross the network unencrypted; serve the gateway over https", rawURL)})
		}
		auth := "Bearer ${NEXUS_TOKEN}"
		if format == FormatVSCode {
			auth = "Bearer ${input:nexus-token}"
		} else {
			warns = append(warns, Warning{Message: "the client sends ${NEXUS_TOKEN} as its bearer token: set NEXUS_TOKEN to one of the agent's tokens in the environment the client runs in (Claude Code expands ${NAME}; Claude Desktop does not expand variables at all)"})
		}
		server = map[string]any{"type": "http", "url": rawURL, "headers": map[string]any{"Authorization": auth}}
	}
	var doc map[string]any
	if format == FormatVSCode {
		doc = map[string]any{"servers": map[string]any{"nexus": server}}
		if rawURL != "" {
			doc["inputs"] = []any{map[string]any{"type": "promptString", "id": "nexus-token", "description": "Your Nexus gateway token", "password": true}}
		}
	} else {
		doc = map[string]any{"mcpServers": map[string]any{"nexus": server}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), warns, nil
}
