package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/nexus-mcp/nexus/internal/diag"
	"github.com/nexus-mcp/nexus/internal/option"
)

// The gateway block's checks that need the merged layers (its table is
// internal/gateway/block's), the server prefix, agent tokens, and the
// client config that goes through the gateway.

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
	// Where a name was written, or the block where that is not known.
	at := func(s option.Site, known bool) (diag.Source, []string) {
		if !known {
			return g.Source, nil
		}
		return s.Source, s.Lines
	}
	for i, s := range g.RequiredServers {
		src, lines := at(option.Site{}, false)
		if i < len(g.RequiredAt) {
			src, lines = at(g.RequiredAt[i], true)
		}
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
				where, known := g.OAuth.AgentsAt[claim]
				src, lines := at(where, known)
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
