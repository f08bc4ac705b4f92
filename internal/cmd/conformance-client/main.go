package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-mcp/nexus/host/mcp"
	"github.com/nexus-mcp/nexus/internal/auth"
	httptransport "github.com/nexus-mcp/nexus/internal/transport/http"
)

// clientMetadataURL is the Client ID Metadata Document the suite's
// authorization servers accept for the CIMD scenarios.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-client:", err)
		os.Exit(1)
	}
}

// scenarioContext is MCP_CONFORMANCE_CONTEXT; every field is optional.
type scenarioContext struct {
	Name             string `json:"name"`
	ClientID         string `json:"client_id"`
	ClientSecret     string `json:"client_secret"`
	PrivateKeyPEM    string `json:"private_key_pem"`
	SigningAlgorithm string `json:"signing_algorithm"`
	IdPClientID      string `json:"idp_client_id"`
	IdPIDToken       string `json:"idp_id_token"`
	IdPIssuer        string `json:"idp_issuer"`
	IdPTokenEndpoint string `json:"idp_token_endpoint"`
	ValidJWT         string `json:"valid_jwt"` // the workload's JWT (auth/wif-jwt-bearer)
	// ToolCalls, when given, are the calls to make instead of one call of
	// each listed tool with made-up arguments.
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: conformance-client [flags...] SERVER_URL")
	}
	serverURL := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc scenarioContext
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "conformance", Output: os.Stderr, Level: hclog.Debug})
	log.Info("running", "scenario", scenario, "url", serverURL)

	if scenario == "sse-retry" {
		// The suite starts all 26 scenarios at once, their mock servers in
		// one Node process, and this scenario times our reconnection to
		// within 250 ms of the server's retry value. On a small machine the
		// burst of the other 25 starting up delays the server's own timers
		// and handlers by more than that, so let the burst pass first; the
		// client behaves the same either way.
		time.Sleep(2 * time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()

	cfg := httptransport.Config{
		Server:  "conformance",
		URL:     serverURL,
		Options: httptransport.Options{RetryBackoff: 100 * time.Millisecond},
		Timeout: 10 * time.Second,
		Logger:  log.Named("http"),
	}
	// Every scenario gets an OAuth client, as the host gives one to every
	// HTTP server: servers that never answer 401 never use it.
	a, err := newAuthorizer(serverURL, scenario, sc, log)
	if err != nil {
		return err
	}
	cfg.Authorizer = a

	conn, err := httptransport.Dial(ctx, cfg)
	if err != nil {
		return err
	}
	// The suite names the revision a scenario runs at; its lifecycle
	// follows (the handshake through 2025-11-25, per-request _meta from
	// 2026-07-28). Without it the client selects the era as the host does.
	version := os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION")
	client, err := mcp.Connect(ctx, conn, mcp.ClientOptions{
		ProtocolVersion: version,
		Info:            mcp.Implementation{Name: "nexus-conformance-client", Version: "1.0.0"},
		Logger:          log.Named("mcp"),
		Timeout:         20 * time.Second,
		Elicitation:     acceptWithDefaults,
		Sampling:        cannedSample,
		OnLog: func(m mcp.LogMessage) {
			log.Info("server log", "level", m.Level, "data", string(m.Data))
		},
	})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer client.Close()
	log.Info("connected", "server", client.ServerInfo().Name, "era", client.Era(), "protocol", client.ProtocolVersion())
	return exercise(ctx, client, sc, log)
}

// exercise lists the server's tools and calls each one (or the calls the
// scenario names), then reads the first resource and gets the first
// prompt when the server has them.
func exercise(ctx context.Context, c *mcp.Client, sc scenarioContext, log hclog.Logger) error {
	caps := c.Capabilities()
	if caps.Tools != nil {
		tools, err := c.ListTools(ctx)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		type call struct {
			name string
			args any
		}
		var calls []call
		for _, tc := range sc.ToolCalls {
			calls = append(calls, call{tc.Name, tc.Arguments})
		}
		if len(calls) == 0 {
			for _, t := range tools {
				calls = append(calls, call{t.Name, argsFor(t.InputSchema)})
			}
		}
		for _, tc := range calls {
			res, err := c.CallTool(ctx, tc.name, tc.args, nil)
			if err != nil {
				return fmt.Errorf("tools/call %s: %w", tc.name, err)
			}
			var text []string
			for _, ct := range res.Content {
				text = append(text, ct.Text)
			}
			log.Info("tool result", "tool", tc.name, "is_error", res.IsError, "text", strings.Join(text, " "))
		}
		if err := echoSchema(ctx, c, tools); err != nil {
			return err
		}
	}
	if caps.Resources != nil {
		rs, err := c.ListResources(ctx)
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		if len(rs) > 0 {
			if _, err := c.ReadResource(ctx, rs[0].URI); err != nil {
				return fmt.Errorf("resources/read %s: %w", rs[0].URI, err)
			}
		}
	}
	if caps.Prompts != nil {
		ps, err := c.ListPrompts(ctx)
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		if len(ps) > 0 {
			if _, err := c.GetPrompt(ctx, ps[0].Name, nil); err != nil {
				return fmt.Errorf("prompts/get %s: %w", ps[0].Name, err)
			}
		}
	}
	return nil
}

// echoSchema hands a tool's inputSchema back, verbatim, to a server that
// offers json_schema_echo (the json-schema-2020-12-preservation
// scenario): the server checks that the client kept every keyword.
func echoSchema(ctx context.Context, c *mcp.Client, tools []mcp.Tool) error {
	var echo bool
	var focal json.RawMessage
	for _, t := range tools {
		switch t.Name {
		case "json_schema_echo":
			echo = true
		case "json_schema_2020_12_tool":
			focal = t.InputSchema
		}
	}
	if !echo || focal == nil {
		return nil
	}
	args, _ := json.Marshal(map[string]json.RawMessage{"schema": focal})
	if _, err := c.CallTool(ctx, "json_schema_echo", json.RawMessage(args), nil); err != nil {
		return fmt.Errorf("tools/call json_schema_echo: %w", err)
	}
	return nil
}

// argsFor makes arguments that satisfy a simple input schema: each
// required property (or every property, when none is marked required)
// gets its default, its first enum value, or a plain value of its type.
func argsFor(schema json.RawMessage) map[string]any {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	args := map[string]any{}
	if json.Unmarshal(schema, &s) != nil {
		return args
	}
	names := s.Required
	if len(names) == 0 {
		for n := range s.Properties {
			names = append(names, n)
		}
	}
	for _, n := range names {
		args[n] = valueFor(s.Properties[n])
	}
	return args
}

func valueFor(prop json.RawMessage) any {
	var p struct {
		Type    any   `json:"type"`
		Default any   `json:"default"`
		Enum    []any `json:"enum"`
	}
	_ = json.Unmarshal(prop, &p)
	switch {
	case p.Default != nil:
		return p.Default
	case len(p.Enum) > 0:
		return p.Enum[0]
	}
	typ, _ := p.Type.(string)
	if list, ok := p.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "number", "integer":
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "test"
}

// acceptWithDefaults accepts a form elicitation with the schema's default
// values (SEP-1034: a client applies defaults for fields the person left
// alone). URL-mode requests are declined: there is nobody to open them.
func acceptWithDefaults(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if p.Mode == "url" {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	var s struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	content := map[string]any{}
	if json.Unmarshal(p.RequestedSchema, &s) == nil {
		for name, prop := range s.Properties {
			if prop.Default != nil {
				content[name] = prop.Default
			}
		}
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

func cannedSample(_ context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	content, _ := json.Marshal(map[string]string{"type": "text", "text": "This is a test response from the conformance client."})
	return &mcp.CreateMessageResult{Role: "assistant", Content: content, Model: "conformance-model", StopReason: "endTurn"}, nil
}

// newAuthorizer makes the OAuth client for the scenario: the grant and the
// client identity come from the scenario's context, tokens stay in memory,
// and the "browser" follows the authorization server's redirect by itself.
func newAuthorizer(serverURL, scenario string, sc scenarioContext, log hclog.Logger) (*auth.Client, error) {
	cfg := auth.Config{
		ServerName:           "conformance",
		ServerURL:            serverURL,
		ClientID:             sc.ClientID,
		ClientSecret:         sc.ClientSecret,
		ClientMetadataURL:    clientMetadataURL,
		ClientName:           "nexus-conformance-client",
		NoStore:              true,
		Opener:               followRedirect,
		AllowPrivateNetworks: false, // the mock servers are on localhost, which is always allowed
		RedirectTimeout:      15 * time.Second,
		Logger:               log,
	}
	switch {
	case sc.IdPIDToken != "":
		cfg.Grant = auth.GrantEnterprise
		cfg.Enterprise = &auth.Enterprise{
			IDToken:     sc.IdPIDToken,
			IdPTokenURL: sc.IdPTokenEndpoint,
			IdPIssuer:   sc.IdPIssuer,
			IdPClientID: sc.IdPClientID,
		}
	case sc.ValidJWT != "":
		cfg.Grant = auth.GrantJWTBearer
		cfg.Assertion = sc.ValidJWT
		cfg.ClientMetadataURL = ""
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		cfg.Grant = auth.GrantClientCredentials
		if sc.PrivateKeyPEM != "" {
			cfg.PrivateKeyPEM = []byte(sc.PrivateKeyPEM)
			cfg.SigningAlg = sc.SigningAlgorithm
			cfg.ClientSecret = ""
		}
	}
	return auth.New(cfg)
}

// noFollow makes the requests a browser would, one hop at a time.
var noFollow = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// followRedirect plays the person at the browser: it opens the
// authorization URL, where the suite's authorization server approves at
// once and redirects to our loopback listener, and delivers that redirect.
func followRedirect(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := noFollow.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode/100 != 3 || loc == "" {
		return fmt.Errorf("the authorization endpoint answered HTTP %d without a redirect", resp.StatusCode)
	}
	u, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return fmt.Errorf("the authorization endpoint redirected to %q: %w", loc, err)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" && h != "::1" {
		return fmt.Errorf("refusing to follow a redirect off loopback: %s", (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String())
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err = noFollow.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
